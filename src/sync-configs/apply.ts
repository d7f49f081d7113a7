/**
 * `apply`: makes the service match one plan entry, and records it (docs/declared-sync-configs.md).
 * The caller holds the mirror's lease, so no pass of it starts meanwhile; a pass already in flight
 * refuses any change (its runs keep their settings), and every change makes the mirror's next pass
 * a full snapshot, so that what is no longer collected is swept.
 */
import type { ApiClient } from "../api/client.js";
import type { SyncConfigListItem } from "../api/schemas.js";
import { CreateOutcomeUnknownError, NameTakenError } from "../errors.js";
import type { Store } from "../store/store.js";
import { aPass } from "../sync/pass-name.js";
import { adoptProblem, isPending, type PlanEntry } from "./plan.js";
import { describeRefusal } from "./refusal.js";
import type { DesiredSyncConfig } from "./resolve.js";

export interface ApplyFlags {
  adopt: boolean;
  prune: boolean;
}

export type ApplyDone =
  | "created"
  | "replaced"
  | "adopted"
  | "unchanged"
  | "deleted"
  | "released"
  | "forgotten"
  | "skipped"
  | "refused";

export interface ApplyResult {
  mirror: string;
  done: ApplyDone;
  message: string;
  syncConfigId: string | null;
  /** The mirror's next pass is a full snapshot. */
  fullOwed: boolean;
}

export interface ApplyDeps {
  api: ApiClient;
  store: Store;
  now: () => Date;
  signal?: AbortSignal;
}

export async function applyEntry(e: PlanEntry, deps: ApplyDeps, flags: ApplyFlags): Promise<ApplyResult> {
  const result = (done: ApplyDone, message: string): ApplyResult => ({
    mirror: e.mirror,
    done,
    message,
    syncConfigId: e.syncConfigId,
    fullOwed: false,
  });
  if (e.action === "not_declared") return result("skipped", "not declared in the file");
  if (e.action === "forget") {
    await deps.store.syncConfigs.remove(e.mirror);
    return result("forgotten", `no longer managed (${e.notes.join("; ")})`);
  }
  if (e.action === "unmanaged") return prune(e, deps, flags, result);
  if (!e.desired) throw new Error(`plan entry of ${e.mirror} has no declaration`);
  const want = e.desired;
  const refuse = async (message: string, createRefused = false) => {
    await deps.store.syncConfigs.recordError(e.mirror, {
      error: message,
      at: deps.now().toISOString(),
      createRefused,
    });
    return result("refused", message);
  };
  if (e.problem) return refuse(e.problem);
  if (e.needs === "adopt" && !flags.adopt) return refuse(adoptProblem(e));
  const previousId = (await deps.store.mirrors.get(e.mirror))?.syncConfigId;
  // A rename too, though it alters nothing collected: one rule for every change, which an operator
  // can rely on without knowing which fields the service reads when it collects.
  const changing = isPending(e) || previousId !== e.syncConfigId;
  if (changing) {
    const inFlight = await deps.store.triggers.findInFlight(e.mirror);
    if (inFlight)
      return refuse(
        `mirror ${e.mirror} has ${aPass(inFlight.mode)} in flight (trigger ${inFlight.triggerId ?? "being started"}): its runs keep their settings, so the change waits; apply again once it ends (\`syncmirror status\` shows it; \`syncmirror sync --mirror ${e.mirror}\` finishes it when no daemon runs), or let the daemon (manage_sync_configs: true) apply it before the next pass`,
      );
  }
  let remote: SyncConfigListItem | undefined;
  try {
    if (e.action === "create") {
      await deps.store.syncConfigs.recordCreating(e.mirror, {
        name: want.fields.name,
        projectId: want.projectId,
        at: deps.now().toISOString(),
      });
      remote = await create(want, deps);
    } else if (e.changes.length > 0 && e.syncConfigId) {
      remote = await deps.api.replaceSyncConfig(e.syncConfigId, want.fields, deps.signal);
    }
  } catch (error) {
    return refuse(
      describeRefusal(error, want),
      e.action === "create" && !(error instanceof CreateOutcomeUnknownError),
    );
  }
  const id = remote?.id ?? e.syncConfigId;
  if (!id) throw new Error(`apply of ${e.mirror}: no sync config id`);
  const adopting = e.needs === "adopt";
  // A mirror that never ran a pass has no state, and its first pass is a full snapshot anyway.
  const fullOwed = previousId !== undefined && changing;
  const at = deps.now().toISOString();
  await deps.store.transaction(async (tx) => {
    // Whether syncmirror created this config, which `--prune` decides on, is known by the record
    // that held this very config: the one of a mirror since renamed, or this mirror's own unless it
    // held one now gone upstream (a config created in its place is syncmirror's).
    const holder = e.takenFrom ? await tx.syncConfigs.find(e.takenFrom) : e.record;
    const kept = holder?.syncConfigId === id ? holder : null;
    if (e.takenFrom) await tx.syncConfigs.remove(e.takenFrom);
    await tx.syncConfigs.recordApplied(e.mirror, {
      syncConfigId: id,
      projectId: want.projectId,
      name: want.fields.name,
      origin: adopting ? "adopted" : (kept?.origin ?? "created"),
      adoptedAt: adopting ? at : (kept?.adoptedAt ?? null),
      appliedHash: want.hash,
      at,
      fullOwed,
    });
  });
  const done: ApplyDone =
    e.action === "create"
      ? "created"
      : adopting
        ? "adopted"
        : e.changes.length > 0
          ? "replaced"
          : "unchanged";
  return {
    ...result(done, describeDone(done, { ...e, syncConfigId: id }, fullOwed)),
    syncConfigId: id,
    fullOwed,
  };
}

async function prune(
  e: PlanEntry,
  deps: ApplyDeps,
  flags: ApplyFlags,
  result: (done: ApplyDone, message: string) => ApplyResult,
): Promise<ApplyResult> {
  if (!flags.prune)
    return result("skipped", `kept sync config "${e.name}" (${e.syncConfigId}): ${e.notes.join("; ")}`);
  if (e.record?.origin === "created" && e.syncConfigId) {
    await deps.api.deleteSyncConfig(e.syncConfigId, deps.signal);
    await deps.store.syncConfigs.remove(e.mirror);
    return result("deleted", `deleted sync config "${e.name}" upstream (its runs and exports stay readable)`);
  }
  await deps.store.syncConfigs.remove(e.mirror);
  return result("released", `released sync config "${e.name}": left upstream, no longer managed`);
}

/**
 * POSTs the config. A POST that may have created it is followed by a lookup of its name (names are
 * unique in a project, so a config found is the one it made), and only then by one more POST.
 */
async function create(want: DesiredSyncConfig, deps: ApplyDeps): Promise<SyncConfigListItem> {
  const body = { project_id: want.projectId, ...want.fields };
  for (let attempt = 1; ; attempt++) {
    try {
      return await deps.api.createSyncConfig(body, deps.signal);
    } catch (error) {
      const mayExist =
        error instanceof CreateOutcomeUnknownError || (attempt > 1 && error instanceof NameTakenError);
      if (!mayExist) throw error;
      let found: SyncConfigListItem | undefined;
      try {
        for await (const c of deps.api.listSyncConfigs(want.projectId, deps.signal)) {
          if (c.name !== want.fields.name) continue;
          found = c;
          break;
        }
      } catch {
        throw error;
      }
      if (found) return found;
      if (attempt > 1) throw error;
    }
  }
}

/**
 * Nothing for `applyEntry` to do, upstream or in the database: the service holds the declaration,
 * and the record says so for the config the mirror is bound to (`boundId`). Such an entry needs
 * no lease: `apply` beside a pass in flight reports it up to date instead of refusing it.
 */
export function upToDate(e: PlanEntry, boundId: string | undefined): ApplyResult | undefined {
  const settled =
    e.action === "none" &&
    e.changes.length === 0 &&
    e.problem === null &&
    e.needs === null &&
    e.takenFrom === null &&
    e.syncConfigId !== null &&
    e.record?.syncConfigId === e.syncConfigId &&
    e.record.appliedHash === e.desired?.hash &&
    e.record.lastError === null &&
    boundId === e.syncConfigId;
  if (!settled) return undefined;
  return {
    mirror: e.mirror,
    done: "unchanged",
    message: describeDone("unchanged", e, false),
    syncConfigId: e.syncConfigId,
    fullOwed: false,
  };
}

function describeDone(done: ApplyDone, e: PlanEntry, fullOwed: boolean): string {
  const what = `sync config "${e.name}" (${e.syncConfigId})`;
  const fields = e.changes.map((c) => c.field).join(", ");
  const full = fullOwed ? "; the next pass is a full snapshot" : "";
  if (done === "created") return `created ${what}${full}`;
  if (done === "adopted") return `adopted ${what}${fields ? `, replaced ${fields}` : ""} (recorded)${full}`;
  if (done === "replaced") return `replaced ${fields} of ${what}${full}`;
  return `${what} is up to date`;
}
