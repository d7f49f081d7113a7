/** POST /sync-task: one run per user, one source per server that user can reach; all or nothing. */
import { configUsers, getConfig } from "./configs.js";
import type { ServerRecord } from "./dataset.js";
import { HttpError, invalid, requireObject } from "./http-error.js";
import { isAccessible } from "./people.js";
import { premiumRefusal } from "./premium.js";
import type { ConfigRecord, RunRecord, SimState, SourceRecord } from "./state.js";

export const MAX_PAIRS_PER_TRIGGER = 500;
export const MAX_SKIPPED_LISTED = 100;
const TRIGGER_FIELDS = new Set(["sync_config_id", "since", "skill_ref"]);

interface Skipped {
  user_email: string;
  server_instance_id: string;
  server_name: string;
  reason: "not_a_project_user" | "not_syncable" | "not_accessible";
  auth_status?: string;
}

export function triggerSync(state: SimState, body: unknown) {
  const input = parseTriggerBody(body);
  if (!state.premium) throw premiumRefusal(state.premiumRefusalStatus);
  const config = getConfig(state, input.syncConfigId);
  if (state.cannotStart !== null) throw new HttpError(409, state.cannotStart);
  const servers = config.serverIds.flatMap((id) => state.serverById(id) ?? []);
  const { runnable, skipped } = planPairs(state, config, servers);
  if (runnable.length === 0) {
    throw new HttpError(400, "no user of this sync config can reach any of its servers");
  }
  const runs = startRuns(state, config, sourceLabels(servers), runnable, input);
  return {
    trigger_id: runs[0]?.triggerId ?? "",
    sync_config_id: config.id,
    status: "pending",
    since: input.since,
    runs: runs.map((run) => ({
      sync_id: run.syncId,
      user_email: run.userEmail,
      sources: run.sources.map((s) => ({
        ...sourceIdentity(s),
        resolved_by: "explicit",
        config_warnings: [],
        task_id: s.taskId,
      })),
    })),
    skipped: skipped.slice(0, MAX_SKIPPED_LISTED),
    skipped_count: skipped.length,
    resolved_skill:
      input.skillRef === null ? null : { skill_ref: input.skillRef, name: input.skillRef, version: 1 },
    skill_warning: null,
  };
}

interface RunnableUser {
  email: string;
  user: number;
  servers: ServerRecord[];
}

/** Every user x server pair of the config, split into who runs where and what is skipped (why). */
function planPairs(
  state: SimState,
  config: ConfigRecord,
  servers: readonly ServerRecord[],
): { runnable: RunnableUser[]; skipped: Skipped[] } {
  const users = configUsers(state, config);
  const pairs = users.length * servers.length;
  if (pairs > MAX_PAIRS_PER_TRIGGER) {
    throw new HttpError(
      400,
      `this trigger would start ${pairs} user x server pairs; the limit is ${MAX_PAIRS_PER_TRIGGER}`,
    );
  }
  const skipped: Skipped[] = [];
  const runnable: RunnableUser[] = [];
  for (const { email, user } of users) {
    const reachable = servers.filter((server) => {
      const reason = skipReason(state, config, user, server);
      if (reason) {
        const { server_instance_id, server_name } = server;
        skipped.push({ user_email: email, server_instance_id, server_name, ...reason });
      }
      return reason === undefined;
    });
    if (reachable.length > 0) runnable.push({ email, user, servers: reachable });
  }
  return { runnable, skipped };
}

/** Creates every run of one trigger at once (all or none), stamped with one created_at. */
function startRuns(
  state: SimState,
  config: ConfigRecord,
  labels: ReadonlyMap<string, string>,
  runnable: readonly RunnableUser[],
  input: { since: string | null; sinceMs: number | null },
): RunRecord[] {
  const triggerId = state.newPassId();
  const createdAtMs = state.clock.tick();
  const runs = runnable.map(
    ({ email, user, servers }): RunRecord => ({
      syncId: state.newPassId(),
      triggerId,
      configId: config.id,
      projectId: config.projectId,
      userEmail: email,
      user,
      instructions: config.instructions,
      since: input.since,
      sinceMs: input.sinceMs,
      createdAtMs,
      seq: state.nextSeq(),
      sources: servers.map((server) => newSource(state, server, labels.get(server.server_instance_id) ?? "")),
    }),
  );
  for (const run of runs) state.runs.set(run.syncId, run);
  return runs;
}

/** The fields that name a source everywhere it appears. */
export function sourceIdentity(source: SourceRecord) {
  return {
    source: source.label,
    source_type: source.server.source_type,
    server_name: source.server.server_name,
    server_instance_id: source.server.server_instance_id,
  };
}

/** `notion`, or `notion-team-wiki` when the config has two servers of that type; unique per config. */
export function sourceLabels(servers: readonly ServerRecord[]): Map<string, string> {
  const perType = new Map<string, number>();
  for (const s of servers) perType.set(s.source_type, (perType.get(s.source_type) ?? 0) + 1);
  const labels = new Map<string, string>();
  const used = new Set<string>();
  for (const s of servers) {
    const base =
      (perType.get(s.source_type) ?? 0) > 1 ? `${s.source_type}-${slug(s.server_name)}` : s.source_type;
    let label = base;
    for (let n = 2; used.has(label); n++) label = `${base}-${n}`;
    used.add(label);
    labels.set(s.server_instance_id, label);
  }
  return labels;
}

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "server"
  );
}

function skipReason(state: SimState, config: ConfigRecord, user: number, server: ServerRecord) {
  if (!state.people.isProjectUser(user)) return { reason: "not_a_project_user" as const };
  if (config.unavailable.has(server.server_instance_id)) return { reason: "not_syncable" as const };
  const auth = state.people.authOf(user, server.index);
  if (!isAccessible(auth)) return { reason: "not_accessible" as const, auth_status: auth };
  return undefined;
}

function newSource(state: SimState, server: ServerRecord, label: string): SourceRecord {
  return {
    label,
    server,
    taskId: state.newPassId(),
    sessionId: null,
    status: "PENDING",
    startedAtMs: null,
    completedAtMs: null,
    error: null,
    forcedExportStatus: null,
    snapshot: null,
    continues: [],
  };
}

function parseTriggerBody(body: unknown) {
  const input = requireObject(body);
  const extra = Object.keys(input).filter((key) => !TRIGGER_FIELDS.has(key));
  if (extra.length > 0) {
    throw new HttpError(
      422,
      extra.map((key) => ({
        type: "extra_forbidden",
        loc: ["body", key],
        msg: "Extra inputs are not permitted",
        input: input[key],
      })),
    );
  }
  if (typeof input.sync_config_id !== "string")
    throw invalid(["body", "sync_config_id"], "Field required", "missing");
  const since = input.since ?? null;
  if (since !== null && typeof since !== "string")
    throw invalid(["body", "since"], "Input should be a valid datetime");
  const sinceMs = since === null ? null : parseIsoDate(since);
  if (Number.isNaN(sinceMs))
    throw invalid(["body", "since"], "Input should be a valid datetime", "datetime_parsing", since);
  const skillRef = input.skill_ref ?? null;
  if (skillRef !== null && typeof skillRef !== "string")
    throw invalid(["body", "skill_ref"], "Input should be a valid string");
  return { syncConfigId: input.sync_config_id, since, sinceMs, skillRef };
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Epoch ms of an ISO 8601 date or date-time (UTC when no offset is given), or NaN. */
export function parseIsoDate(text: string): number {
  const match = ISO_8601.exec(text);
  if (!match || !isCalendarDay(text)) return Number.NaN;
  const hasTime = text.length > 10;
  let normalized = text.replace(" ", "T").replace(/(\.\d{3})\d+/, "$1");
  if (hasTime && match[1] === undefined) normalized += "Z";
  return Date.parse(normalized.replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
}

/** Date.parse rolls "2026-02-30" over into March; the service refuses a day its month does not have. */
function isCalendarDay(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split("-").map(Number);
  if (year === undefined || month === undefined || day === undefined) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return days !== undefined && day >= 1 && day <= days;
}
