/**
 * `syncmirror check`: validates the config, reaches the API, resolves each mirror's remote
 * config and prints the user x server access matrix with its problems; a declared sync config
 * that differs from the service (drift) is a problem too. Exit 0 ok, 1 problems found, 2 config
 * invalid (a declared server or project the service does not know included, a database that
 * refuses the configuration: every other command stops on it with exit 2).
 */
import { isBaseUrlWrong, WRONG_BASE_URL_ADVICE } from "../api/base-url.js";
import type { ApiClient } from "../api/client.js";
import type { AccessItem, SyncConfig } from "../api/schemas.js";
import type { Config, MirrorConfig } from "../config.js";
import {
  ConfigError,
  NotFoundError,
  SyncmirrorError,
  UnauthorizedError,
  UnavailableError,
} from "../errors.js";
import { silentLogger } from "../log.js";
import { createConfiguredApi, createIoLogger } from "../runtime.js";
import { checkStore, openStoreForReading } from "../store/open-store.js";
import { type RetiredMirrorStatus, retiredGrants } from "../sync/status-report.js";
import { type PlanEntry, planSyncConfigs } from "../sync-configs/plan.js";
import { printable } from "../terminal-text.js";
import type { Command, CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const check: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("check", args, {});
    const config = loadCommandConfig(values.config, io);
    const log = createIoLogger(io);
    const api = createConfiguredApi(config, log, {
      retriedBy: "operator",
      maxAttempts: Math.min(config.api.maxAttempts, 3),
    });
    // "read", not "ok": declared sync configs name servers and users only the service can resolve.
    io.stdout.write(`config ${config.file}: read (${config.mirrors.length} mirror(s))\n`);
    try {
      const database = await checkStore(config, silentLogger());
      io.stdout.write(`${database.status === "ok" ? "" : "PROBLEM "}${database.message}\n`);
      let problems = database.status === "ok" ? 0 : 1;
      const refusals = new Map<string, string>();
      if (database.status === "ok") problems += await checkStored(config, io, log, refusals);
      const unreachable = await reachApi(api, config, io.signal);
      if (unreachable !== null) {
        // Every mirror would meet the same failure: one line says it and what to do.
        io.stdout.write(`PROBLEM ${printable(unreachable)}\n`);
        for (const mirror of config.mirrors)
          io.stdout.write(`\nmirror ${mirror.name}: not checked, the API did not answer (see above)\n`);
        io.stdout.write(`${problems + 1} problem(s) found\n`);
        return database.status === "refused" ? 2 : 1;
      }
      const plan = await planDeclared(config, api, io, log).catch((error: unknown) => {
        if (!(error instanceof SyncmirrorError) || error instanceof ConfigError) throw error;
        io.stdout.write(
          `PROBLEM the declared sync configs could not be compared: ${printable(error.message)}\n`,
        );
        problems++;
        return [];
      });
      for (const mirror of config.mirrors) {
        const entry = plan.find((e) => e.mirror === mirror.name);
        problems += await checkMirror(mirror, entry, refusals.get(mirror.name), api, io);
      }
      io.stdout.write(problems === 0 ? "no problems found\n" : `${problems} problem(s) found\n`);
      if (database.status === "refused") return 2;
      return problems === 0 ? 0 : 1;
    } finally {
      await api.close();
    }
  });

/**
 * What the database says: mirrors it knows that the config no longer names (one that still grants
 * access is a problem, since nothing sweeps it any more; one that grants nothing only a note), and
 * into `refusals` each configured mirror whose last pass the service refused, as the line to show
 * under it. Returns the problems printed here.
 */
async function checkStored(
  config: Config,
  io: CommandIo,
  log: ReturnType<typeof createIoLogger>,
  refusals: Map<string, string>,
): Promise<number> {
  const store = await openStoreForReading(config, log);
  let retired: RetiredMirrorStatus[];
  try {
    retired = await store.mirrors.retired(config.mirrors.map((m) => m.name));
    for (const mirror of config.mirrors) {
      const state = await store.mirrors.get(mirror.name);
      if (state?.lastOutcome === "refused")
        refusals.set(mirror.name, refusalProblem(state.lastOutcomeAt, state.lastMessage));
    }
  } finally {
    await store.close();
  }
  for (const r of retired)
    io.stdout.write(
      `${r.keys > 0 ? "PROBLEM " : ""}retired mirror ${r.mirror} (not in the config) ${retiredGrants(r)}\n`,
    );
  return retired.filter((r) => r.keys > 0).length;
}

/**
 * Asks `GET /projects` once before any mirror: a rejected token, a service nobody answers at or a
 * base URL that answers 404 everywhere is said once, with what to do, and not once per mirror.
 * Null when the API answers (any other failure is left to each mirror's own requests).
 */
async function reachApi(api: ApiClient, config: Config, signal: AbortSignal): Promise<string | null> {
  try {
    await api.listProjects(signal);
    return null;
  } catch (error) {
    if (error instanceof NotFoundError)
      return (await configAnswers(api, config, signal)) ? null : WRONG_BASE_URL_ADVICE;
    if (error instanceof UnauthorizedError || error instanceof UnavailableError) return apiProblem(error);
    if (error instanceof SyncmirrorError) return null;
    throw error;
  }
}

/**
 * Whether the first mirror's sync config answers where `GET /projects` gave 404: the mirror reads
 * no project, so a service (or a stand-in for one) without that route is still the API, and only
 * a 404 on both says the base URL is wrong.
 */
async function configAnswers(api: ApiClient, config: Config, signal: AbortSignal): Promise<boolean> {
  const id = config.mirrors.find((m) => m.syncConfigId)?.syncConfigId;
  if (!id) return false;
  try {
    await api.getSyncConfig(id, signal);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    if (error instanceof SyncmirrorError) return true;
    throw error;
  }
}

/**
 * A request that failed: one the service did not answer (network, timeout, 5xx or 429 after the
 * retries) did not reach the API; any other answer (a rejected token, a body that cannot be read)
 * says what it was itself.
 */
function apiProblem(error: SyncmirrorError): string {
  return error instanceof UnavailableError ? `cannot reach the API: ${error.message}` : error.message;
}

/** The plan of the declared sync configs (nothing to read when no mirror declares one). */
async function planDeclared(
  config: Config,
  api: ApiClient,
  io: CommandIo,
  log: ReturnType<typeof createIoLogger>,
): Promise<PlanEntry[]> {
  if (!config.mirrors.some((m) => m.declared)) return [];
  const store = await openStoreForReading(config, log);
  try {
    return await planSyncConfigs(config, { api, store, signal: io.signal });
  } finally {
    await store.close();
  }
}

async function checkMirror(
  mirror: MirrorConfig,
  entry: PlanEntry | undefined,
  refusal: string | undefined,
  api: ApiClient,
  io: CommandIo,
): Promise<number> {
  // The service's names and error texts are in these lines.
  const out = (line: string) => io.stdout.write(`${printable(line)}\n`);
  const id = mirror.syncConfigId ?? entry?.record?.syncConfigId ?? null;
  const declared = mirror.declared ? ` (declared as "${mirror.declared.name}")` : "";
  io.stdout.write("\n");
  out(`mirror ${mirror.name} -> sync config ${id ?? "not applied yet"}${declared}`);
  const drift = entry ? driftOf(entry) : null;
  if (drift) out(`  PROBLEM ${drift}`);
  if (refusal) out(`  PROBLEM ${refusal}`);
  const known = (drift ? 1 : 0) + (refusal ? 1 : 0);
  if (id === null) return known;
  let remote: SyncConfig;
  let access: AccessItem[];
  try {
    remote = await api.getSyncConfig(id, io.signal);
    access = await api.listAccess(id, io.signal);
  } catch (error) {
    if (error instanceof NotFoundError && (await isBaseUrlWrong(api, io.signal))) {
      out(`  PROBLEM ${WRONG_BASE_URL_ADVICE}`);
      return 1 + known;
    }
    if (error instanceof NotFoundError) {
      const fix = mirror.declared
        ? "run `syncmirror apply` to create it again"
        : "fix mirrors[].sync_config_id";
      out(`  PROBLEM remote config missing: no sync config ${id} upstream; ${fix}`);
      return 1 + known;
    }
    if (error instanceof SyncmirrorError) {
      out(`  PROBLEM ${apiProblem(error)}`);
      return 1 + known;
    }
    throw error;
  }
  out(`  remote name: ${remote.name}; servers: ${remote.servers.length}`);
  const { lines, problems } = accessMatrix(remote, access);
  for (const line of lines) out(`  ${line}`);
  for (const p of problems) out(`  PROBLEM ${p}`);
  return problems.length + known;
}

/**
 * A last pass the service refused (Background Sync off, a trigger answered 400 or 409): check only
 * reads, so the service says this only through the refusal a pass met. The pass's message says
 * what to do; the next pass that succeeds clears it.
 */
function refusalProblem(at: string | null, message: string | null): string {
  return `the last pass (at ${at ?? "an unknown time"}) was refused: ${message ?? "no reason recorded"}; check cannot see whether that still holds (it sends no trigger): the next pass that succeeds clears this`;
}

/**
 * The user x server table of the access check, and its problems: each paused server once (every
 * user's cell shows it), each user who left once (they reach nothing), each other pair a user
 * cannot reach, every one saying what to do.
 */
function accessMatrix(
  remote: SyncConfig,
  access: readonly AccessItem[],
): { lines: string[]; problems: string[] } {
  const problems: string[] = [];
  const paused = new Set<string>();
  for (const s of remote.servers) {
    if (s.available === false) {
      paused.add(s.server_instance_id);
      problems.push(
        `server ${s.server_name ?? s.server_instance_id} is not available (paused or no longer syncable): triggers skip it; resume it in the service, or remove it from the sync config`,
      );
    }
  }
  const servers = remote.servers.map((s) => ({
    id: s.server_instance_id,
    label: s.server_name ?? s.source_type,
  }));
  const header = ["user", "project", ...servers.map((s) => s.label)];
  const rows = access.map((item) => {
    if (!item.project_user)
      problems.push(
        `${item.user_email} is not a project user: they lose access at the next full pass; add them back to the project, or remove them from the sync config`,
      );
    const cells = servers.map((server) => {
      const entry = item.servers.find((x) => x.server_instance_id === server.id);
      if (!entry) return "-";
      if (!entry.accessible && item.project_user && !paused.has(server.id))
        problems.push(
          `${item.user_email} cannot be synced on ${server.label}: ${entry.auth_status}: ${accessAdvice(item.user_email, server.label, entry.auth_status)}`,
        );
      return entry.accessible ? `ok (${entry.auth_status})` : `NO (${entry.auth_status})`;
    });
    return [item.user_email, item.project_user ? "yes" : "NO", ...cells];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const lines = [header, ...rows].map((row) =>
    row
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd(),
  );
  return { lines, problems };
}

/** What to do about a user the access check says cannot reach a server, by its auth_status. */
function accessAdvice(user: string, server: string, authStatus: string): string {
  switch (authStatus) {
    case "not_authenticated":
      return `${user} must sign in to ${server} in the service`;
    case "needs_project_admin":
      return `a project admin must connect ${server} in the service`;
    case "needs_tenant_admin":
      return `a tenant admin must allow ${server} in the service`;
    case "not_syncable":
      return `${server} cannot be synced for them (paused or unsupported): resume it in the service, or remove it from the sync config`;
    default:
      return `see ${user}'s connection to ${server} in the service`;
  }
}

/** A declared sync config that differs from the service, as one problem line; null when they agree. */
function driftOf(e: PlanEntry): string | null {
  if (e.problem) return e.problem;
  if (e.action === "create")
    return "the declared sync config does not exist upstream: run `syncmirror apply`";
  if (e.action === "adopt" && e.needs === "adopt")
    return `a sync config named "${e.name}" exists that syncmirror did not create: \`syncmirror apply --adopt\` takes it over`;
  if (e.action === "replace" || e.action === "adopt")
    return `drift: the service's sync config differs from the file in ${e.changes.map((c) => c.field).join(", ")}: \`syncmirror plan\` shows how, \`syncmirror apply\` fixes it`;
  return null;
}
