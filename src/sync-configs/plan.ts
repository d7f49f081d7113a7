/**
 * `plan`: per mirror, what applying the file would change upstream (docs/declared-sync-configs.md).
 * Read-only: it reads the service and the database, and writes nothing.
 *
 * Which remote config is a declared mirror's: the one syncmirror recorded for it; else the one of
 * the declared name in its project, which is ours only when syncmirror made it (a create whose
 * answer was lost, or a mirror since renamed in the file) and otherwise needs `apply --adopt`.
 */
import type { ApiClient } from "../api/client.js";
import type { SyncConfig, SyncConfigListItem } from "../api/schemas.js";
import type { Config, MirrorConfig } from "../config.js";
import { declaredKey } from "../config-sync-config.js";
import { NotFoundError } from "../errors.js";
import type { ManagedSyncConfig } from "../store/managed-sync-configs.js";
import type { Store } from "../store/store.js";
import { aPass } from "../sync/pass-name.js";
import { diffSyncConfig, type FieldChange } from "./diff.js";
import { type DesiredSyncConfig, isDeclared, resolveDeclarations } from "./resolve.js";

export type PlanAction = "create" | "replace" | "adopt" | "none" | "unmanaged" | "forget" | "not_declared";

export interface PlanEntry {
  mirror: string;
  action: PlanAction;
  name: string | null;
  syncConfigId: string | null;
  changes: FieldChange[];
  /** The flag `apply` needs to do it: `--adopt` a config it did not create, `--prune` an unmanaged one. */
  needs: "adopt" | "prune" | null;
  /** Why `apply` cannot do it. */
  problem: string | null;
  notes: string[];
  desired: DesiredSyncConfig | null;
  record: ManagedSyncConfig | null;
  /** The mirror, no longer in the file, whose record held this config (a renamed mirror). */
  takenFrom: string | null;
}

export interface PlanDeps {
  api: ApiClient;
  store: Store;
  signal?: AbortSignal;
}

/** Every mirror of the file, then each record of a mirror that no longer declares its config. */
export async function planSyncConfigs(config: Config, deps: PlanDeps): Promise<PlanEntry[]> {
  const desired = await resolveDeclarations(
    config.mirrors.filter(isDeclared),
    deps.api,
    config.file,
    deps.signal,
  );
  const records = new Map((await deps.store.syncConfigs.list()).map((r) => [r.mirror, r]));
  const lookup = createLookup(deps);
  const entries: PlanEntry[] = [];
  for (const mirror of config.mirrors) {
    const want = desired.find((d) => d.mirror.name === mirror.name);
    entries.push(
      want
        ? await planDeclared(want, { config, records, lookup, deps })
        : { ...emptyEntry(mirror.name, "not_declared"), syncConfigId: mirror.syncConfigId },
    );
  }
  const taken = new Set(entries.map((e) => e.takenFrom));
  for (const record of records.values()) {
    if (isDeclaredIn(config, record.mirror) || taken.has(record.mirror)) continue;
    entries.push(await planUndeclared(record, config.mirrors, lookup));
  }
  return entries;
}

/** The entry of one declared mirror (the daemon plans mirror by mirror). */
export async function planMirror(config: Config, mirror: string, deps: PlanDeps): Promise<PlanEntry> {
  const declared = config.mirrors.filter((m) => m.name === mirror && isDeclared(m));
  const [want] = await resolveDeclarations(declared.filter(isDeclared), deps.api, config.file, deps.signal);
  if (!want) return emptyEntry(mirror, "not_declared");
  const records = new Map((await deps.store.syncConfigs.list()).map((r) => [r.mirror, r]));
  return planDeclared(want, { config, records, lookup: createLookup(deps), deps });
}

/** Whether `apply` would change something upstream. */
export function isPending(e: PlanEntry): boolean {
  return e.action === "create" || e.action === "replace" || e.action === "adopt";
}

/** Why `apply` without `--adopt` refuses a config syncmirror did not create, as plan and apply say it. */
export function adoptProblem(e: PlanEntry): string {
  return `a sync config named "${e.desired?.fields.name ?? e.name}" (${e.syncConfigId}) already exists and syncmirror did not create it: \`syncmirror apply --adopt\` takes it over (recorded), or rename sync_config.name`;
}

/** Exit codes (docs/reference/cli.md): 1 problems (a foreign config to adopt counts: `apply` refuses it), 3 changes pending, 0 nothing to change. */
export function planExitCode(entries: readonly PlanEntry[]): number {
  if (entries.some((e) => e.problem !== null || e.needs === "adopt")) return 1;
  return entries.some(isPending) ? 3 : 0;
}

/** What a create starts from: every field of the declaration shows as a change. */
const NOTHING: SyncConfig = {
  id: "",
  name: "",
  instructions: "",
  all_users: false,
  user_emails: [],
  servers: [],
};

interface Lookup {
  /** The remote config, or undefined when it is gone (404). */
  byId(id: string): Promise<SyncConfig | undefined>;
  /** The config of that name as the project's list gives it: which one it is, not what it holds. */
  byName(projectId: string, name: string): Promise<SyncConfigListItem | undefined>;
}

function createLookup({ api, signal }: PlanDeps): Lookup {
  const lists = new Map<string, Promise<Map<string, SyncConfigListItem>>>();
  const listOf = async (projectId: string) => {
    const byName = new Map<string, SyncConfigListItem>();
    for await (const c of api.listSyncConfigs(projectId, signal))
      if (!byName.has(c.name)) byName.set(c.name, c);
    return byName;
  };
  return {
    async byId(id) {
      try {
        return await api.getSyncConfig(id, signal);
      } catch (error) {
        if (error instanceof NotFoundError) return undefined;
        throw error;
      }
    },
    async byName(projectId, name) {
      if (!lists.has(projectId)) lists.set(projectId, listOf(projectId));
      return (await lists.get(projectId))?.get(name);
    },
  };
}

interface PlanContext {
  config: Config;
  records: ReadonlyMap<string, ManagedSyncConfig>;
  lookup: Lookup;
  deps: PlanDeps;
}

async function planDeclared(want: DesiredSyncConfig, ctx: PlanContext): Promise<PlanEntry> {
  const name = want.mirror.name;
  const record = ctx.records.get(name) ?? null;
  const e: PlanEntry = { ...emptyEntry(name, "create"), name: want.fields.name, desired: want, record };
  if (record?.syncConfigId && record.projectId !== want.projectId) {
    // A config cannot move between projects; forgetting it here would leave it upstream unseen.
    e.problem = `${declaredKey(want.mirror.declared, "project")}: sync config ${record.syncConfigId} was applied in project ${record.projectId}, and a config cannot move between projects: rename the mirror and \`apply --prune\` to delete the old one, or name its project again`;
    return e;
  }
  let remote = record?.syncConfigId ? await ctx.lookup.byId(record.syncConfigId) : undefined;
  if (record?.syncConfigId && !remote)
    e.notes.push(`sync config ${record.syncConfigId}, which syncmirror ${record.origin}, is gone upstream`);
  if (!remote) {
    const listed = await ctx.lookup.byName(want.projectId, want.fields.name);
    remote = listed && (await ctx.lookup.byId(listed.id));
    const owner = [...ctx.records.values()].find((r) => r.syncConfigId === remote?.id && r.mirror !== name);
    if (remote && owner && !isDeclaredIn(ctx.config, owner.mirror)) e.takenFrom = owner.mirror;
    else if (remote && !record?.creatingAt) e.needs = "adopt";
    if (remote && record?.creatingAt) e.notes.push("created by an apply whose answer was lost");
  }
  e.changes = diffSyncConfig(want, remote ?? NOTHING);
  if (remote) {
    e.syncConfigId = remote.id;
    e.action = e.needs === "adopt" ? "adopt" : e.changes.length > 0 ? "replace" : "none";
    e.problem = sharedWith(ctx, name, remote) ?? (await nameTaken(ctx, want, remote));
  }
  if (isPending(e)) {
    const inFlight = await ctx.deps.store.triggers.findInFlight(name);
    if (inFlight) e.notes.push(`${aPass(inFlight.mode)} is in flight: apply refuses until it ends`);
  }
  return e;
}

/** A rename to the name another config of the project has: the service refuses it (409), so `plan` says so first. */
async function nameTaken(
  ctx: PlanContext,
  want: DesiredSyncConfig,
  remote: SyncConfig,
): Promise<string | null> {
  if (want.fields.name === remote.name) return null;
  const other = await ctx.lookup.byName(want.projectId, want.fields.name);
  return other && other.id !== remote.id
    ? `${declaredKey(want.mirror.declared, "name")}: another sync config of the project (${other.id}) is named "${want.fields.name}", and names are unique in a project: choose another name`
    : null;
}

/** Another mirror of the file that mirrors the same remote config, as a problem. */
function sharedWith(ctx: PlanContext, mirror: string, remote: SyncConfig): string | null {
  const other = ctx.config.mirrors.find(
    (m) =>
      m.name !== mirror &&
      (m.syncConfigId === remote.id || (m.declared && ctx.records.get(m.name)?.syncConfigId === remote.id)),
  );
  return other
    ? `sync config ${remote.id} ("${remote.name}") is mirror ${other.name}'s too: one mirror per sync config (a trigger per config at a time); rename sync_config.name or remove one of them`
    : null;
}

async function planUndeclared(
  record: ManagedSyncConfig,
  mirrors: readonly MirrorConfig[],
  lookup: Lookup,
): Promise<PlanEntry> {
  const e: PlanEntry = {
    ...emptyEntry(record.mirror, "forget"),
    name: record.name,
    syncConfigId: record.syncConfigId,
    record,
  };
  const namedBy = mirrors.find((m) => m.syncConfigId !== null && m.syncConfigId === record.syncConfigId);
  if (!record.syncConfigId || !record.origin) e.notes.push("nothing was applied for it");
  else if (namedBy) e.notes.push(`mirror ${namedBy.name} names it by sync_config_id: it is left as it is`);
  else if (!(await lookup.byId(record.syncConfigId))) e.notes.push("already gone upstream");
  else {
    e.action = "unmanaged";
    e.needs = "prune";
    e.notes.push(
      record.origin === "created"
        ? "syncmirror created it and no mirror declares it any more: `apply --prune` deletes it"
        : "syncmirror adopted it and no mirror declares it any more: `apply --prune` releases it (left upstream, since syncmirror did not create it)",
    );
  }
  return e;
}

function isDeclaredIn(config: Config, mirror: string): boolean {
  return config.mirrors.some((m) => m.name === mirror && m.declared !== null);
}

/** An entry with nothing planned yet: its mirror and action only. */
export function emptyEntry(mirror: string, action: PlanAction): PlanEntry {
  return {
    mirror,
    action,
    name: null,
    syncConfigId: null,
    changes: [],
    needs: null,
    problem: null,
    notes: [],
    desired: null,
    record: null,
    takenFrom: null,
  };
}
