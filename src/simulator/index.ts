/**
 * The simulated upstream service (docs/reference/upstream-api.md): a real HTTP server on 127.0.0.1 for integration tests,
 * benchmarks and `syncmirror demo` / `simulate`. An independent reading of the service's API documentation: it imports
 * nothing from `src/api` or `src/sync`.
 *
 * ```ts
 * const sim = await startSimulator({ docs: 200, users: 3 });
 * await fetch(`${sim.baseUrl}/sync-task`, { method: "POST", headers: { authorization: `Bearer ${sim.token}` }, ... });
 * await sim.close();
 * ```
 *
 * Lifecycle: sources go PENDING -> RUNNING -> COMPLETED / INCOMPLETE / FAILED. In "on-poll" mode
 * every read of a run (its detail, a run-list page it is on, or its export) answers first, then
 * moves each unfinished source one step, so a poller sees pending, running, then finished. In "manual" mode
 * only `runs.advance()` / `runs.finishAll()` move them. `runs.hold()` freezes both.
 * What a source collects is fixed when it finishes (see `setOutcome`).
 *
 * Another process (`npm run bench`, or a user trying the daemon by hand against `syncmirror
 * simulate`) reaches the test controls through the `/_sim` routes of admin.ts, outside the API
 * prefix and behind the same token.
 */
import { randomBytes } from "node:crypto";
import { createAdminRoutes } from "./admin.js";
import { createSimClock } from "./clock.js";
import { createConfig, MAX_SERVERS_PER_CONFIG } from "./configs.js";
import { createConfigsApi, createPeopleApi, createRunsApi } from "./control.js";
import { createDocsApi } from "./docs-api.js";
import { createFaults } from "./faults.js";
import { createRandom, randomUuid } from "./random.js";
import { createRoutes } from "./routes.js";
import { seedWorkspace } from "./seed.js";
import { API_PREFIX, listen, type RequestLogEntry } from "./server.js";
import { SimState } from "./state.js";
import type { Simulator, SimulatorOptions } from "./types.js";

export type { SimClock, SimClockOptions } from "./clock.js";
export type { DocInfo, SourceType } from "./dataset.js";
export type { AddDocOptions, EditDocOptions, SimulatorDocs } from "./docs-api.js";
export type { Fault, FaultApi, FaultKind, PendingFault } from "./faults.js";
export type { AuthStatus } from "./people.js";
export type { RequestLogEntry } from "./server.js";
export type { ExportStatus, Lifecycle, Outcome, OutcomeMatch, RunStatus, SourceStatus } from "./state.js";
export type * from "./types.js";

const DEFAULT_LOG_LIMIT = 50_000;

/** Starts the simulated service; resolves once it listens. Always `close()` it. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const clock = createSimClock(options.clock);
  const seed = options.seed ?? 1;
  const workspace = seedWorkspace({
    seed,
    users: positiveInt(options.users ?? 3, "users"),
    serversPerType: options.serversPerType ?? { notion: 1, github: 1 },
    docs: positiveInt(options.docs ?? 50, "docs", 0),
    startMs: clock.nowMs(),
  });
  const project = { id: randomUuid(workspace.ids), name: "Acme", createdAtMs: clock.nowMs() };
  const state = new SimState(
    workspace.dataset,
    workspace.people,
    clock,
    workspace.ids,
    project,
    options.lifecycle ?? "on-poll",
    options.passIdSeed === undefined ? workspace.ids : createRandom(options.passIdSeed),
  );
  const defaultConfig = createConfig(state, {
    project_id: project.id,
    name: "All servers, all users",
    instructions: "Collect every page, document and issue that is useful for search.",
    // A config holds at most 10 servers: with more, the default config takes the first 10.
    server_instance_ids: workspace.dataset.servers
      .slice(0, MAX_SERVERS_PER_CONFIG)
      .map((s) => s.server_instance_id),
    all_users: true,
  });
  const faults = createFaults();
  const requests: RequestLogEntry[] = [];
  const logLimit = options.requestLogLimit ?? DEFAULT_LOG_LIMIT;
  const token = options.token ?? randomBytes(24).toString("base64url");
  const docs = createDocsApi(state);
  const routes = createRoutes(state, faults);
  const server = await listen(
    {
      routes,
      faults,
      token,
      nowMs: clock.nowMs,
      log(entry) {
        requests.push(entry);
        if (requests.length > logLimit) requests.splice(0, requests.length - logLimit);
      },
      admin: createAdminRoutes({ state, docs, requests, faults, apiRoutes: routes }),
      latencyMs: positiveInt(options.latencyMs ?? 0, "latencyMs", 0),
    },
    options.port ?? 0,
  );
  return {
    baseUrl: `http://127.0.0.1:${server.port}${API_PREFIX}`,
    token,
    projectId: project.id,
    syncConfigId: defaultConfig.id,
    users: [...workspace.people.emails],
    servers: workspace.dataset.servers.map((s) => ({
      server_instance_id: s.server_instance_id,
      server_name: s.server_name,
      display_name: s.display_name,
      source_type: s.source_type,
    })),
    clock: { now: clock.now, advance: clock.advance, set: clock.set },
    docs,
    people: createPeopleApi(state),
    configs: createConfigsApi(state),
    runs: createRunsApi(state),
    setOutcome(match, outcome) {
      state.outcomes.push({ match, outcome, left: outcome.times ?? Number.POSITIVE_INFINITY });
    },
    clearOutcomes() {
      state.outcomes.length = 0;
    },
    setPremium(enabled, refusal) {
      state.setPremium(enabled, refusal?.status);
    },
    renameServer(serverId, names) {
      const server = state.serverById(serverId);
      if (!server) throw new Error(`unknown server ${serverId}`);
      if (names.server_name !== undefined) server.server_name = names.server_name;
      if (names.display_name !== undefined) server.display_name = names.display_name;
    },
    setCannotStart(detail) {
      state.cannotStart = detail;
    },
    setExportVersions(versions) {
      if (versions.schema_version !== undefined) state.schemaVersion = versions.schema_version;
      if (versions.engine_version !== undefined) state.engineVersion = versions.engine_version;
    },
    faults,
    requests,
    close: () => server.close(),
  };
}

function positiveInt(value: number, name: string, min = 1): number {
  if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}`);
  return value;
}
