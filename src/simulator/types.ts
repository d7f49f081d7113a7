/** The simulator's public contract: options and the handle `startSimulator` returns. */
import type { SimClock, SimClockOptions } from "./clock.js";
import type { configView } from "./configs.js";
import type { SourceType } from "./dataset.js";
import type { SimulatorDocs } from "./docs-api.js";
import type { FaultApi } from "./faults.js";
import type { AuthStatus } from "./people.js";
import type { RequestLogEntry } from "./server.js";
import type { Lifecycle, Outcome, OutcomeMatch } from "./state.js";
import type { runDetail } from "./views.js";

export interface SimulatorOptions {
  /** Default 0: an ephemeral port on 127.0.0.1. */
  port?: number;
  /** PRNG seed for servers, users, documents and ids. Default 1. */
  seed?: number;
  /**
   * Seed of the ids a pass creates (trigger, run, task, session). Default: drawn from `seed`, so a
   * test sees the same ids each time. A simulator restarted beside a kept mirror needs fresh ones:
   * the mirror stores them as unique, as a real service's are.
   */
  passIdSeed?: number;
  /** Workspace users `user1@example.com` ... Default 3. */
  users?: number;
  /** Servers per source type. Default one notion and one github; any count per type is allowed. */
  serversPerType?: Partial<Record<SourceType, number>>;
  /** Documents across all servers (round-robin over servers). Default 50. */
  docs?: number;
  /** Bearer token the API accepts. Default: random. */
  token?: string;
  clock?: SimClockOptions;
  /** "on-poll" (default): reading a run moves it; "manual": only `runs.advance` / `finishAll` do. */
  lifecycle?: Lifecycle;
  /** Request log entries kept (oldest dropped first). Default 50,000. */
  requestLogLimit?: number;
  /**
   * Milliseconds every API request waits (a timer, server-side) before it is handled, as a remote
   * service's round trip would; the `/_sim` admin routes are not delayed. Default 0.
   */
  latencyMs?: number;
}

export interface SimulatorServer {
  server_instance_id: string;
  server_name: string;
  display_name: string;
  source_type: SourceType;
}

export type ConfigView = ReturnType<typeof configView>;
export type RunView = ReturnType<typeof runDetail>;

export interface ConfigCreateOptions {
  /** Default "Config N". */
  name?: string;
  instructions?: string;
  /** Default: every server (the first 10). */
  serverIds?: string[];
  /** Default: true unless `userEmails` is given. */
  allUsers?: boolean;
  userEmails?: string[];
}

export interface SimulatorConfigs {
  /** Creates a config (same validation as the API, premium switch ignored); returns its id. */
  create(options?: ConfigCreateOptions): string;
  get(id: string): ConfigView;
  list(): ConfigView[];
  /** `available: false` pauses a server for this config: triggers skip it as `not_syncable`. */
  setServerAvailable(configId: string, serverId: string, available: boolean): void;
  remove(id: string): void;
}

export interface SimulatorPeople {
  list(): { email: string; projectUser: boolean }[];
  /** The user leaves the project: explicit configs skip them (`not_a_project_user`); all-users configs drop them. */
  leaveProject(email: string): void;
  joinProject(email: string): void;
  setAuth(email: string, serverId: string, authStatus: AuthStatus): void;
}

export interface SimulatorRuns {
  /**
   * Moves unfinished sources one step (PENDING -> RUNNING -> finished): of one run (optionally one
   * source label), or of every run. Works in both lifecycles; throws while held.
   */
  advance(syncId?: string, source?: string): void;
  /** Finishes every unfinished source of every run. Throws while held. */
  finishAll(): void;
  /** Freezes every run: polling moves nothing and advance/finishAll throw, until `release()`. */
  hold(): void;
  release(): void;
  readonly held: boolean;
  /** The run vanishes upstream: reading it answers 404 and no list shows it (reliability tests). */
  remove(syncId: string): void;
  /** Every run, newest first, in the run-detail shape. Reading here never moves a run. */
  list(): RunView[];
  get(syncId: string): RunView;
}

export interface Simulator {
  /** "http://127.0.0.1:PORT/api/v1" */
  baseUrl: string;
  token: string;
  projectId: string;
  /** A config over every server (the first 10 when there are more) and all users (all_users: true). */
  syncConfigId: string;
  /** Workspace user emails. */
  users: string[];
  servers: SimulatorServer[];
  clock: SimClock;
  docs: SimulatorDocs;
  /** Project membership and per-server auth (the brief's `users_`). */
  people: SimulatorPeople;
  configs: SimulatorConfigs;
  runs: SimulatorRuns;
  /**
   * How matching sources finish from now on (newest rule first; `times` limits uses). Default
   * without a rule: COMPLETED with everything visible, export status by what was exported.
   */
  setOutcome(match: OutcomeMatch, outcome: Outcome): void;
  clearOutcomes(): void;
  /**
   * Off: create/replace config and trigger answer 403 (or `status`: the service does not document
   * which, and 409 is seen too) naming the Background Sync premium feature.
   */
  setPremium(enabled: boolean, refusal?: { status: 403 | 409 }): void;
  /**
   * Renames a server as the service shows it everywhere from now on (sources, configs, runs): an
   * operator renaming it, or two servers sharing a display name. `servers` above keeps the old names.
   */
  renameServer(serverId: string, names: { server_name?: string; display_name?: string }): void;
  /** Non-null: triggers answer 409 with this detail. */
  setCannotStart(detail: string | null): void;
  /** Export `schema_version` (default 1) and `engine_version` (default 2; any change changes every content_hash). */
  setExportVersions(versions: { schema_version?: number | string; engine_version?: number | string }): void;
  faults: FaultApi;
  /** Live request log, oldest first (assign `length = 0` to clear). Never holds the token. */
  requests: RequestLogEntry[];
  close(): Promise<void>;
}
