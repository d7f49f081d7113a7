/**
 * The repository documents its whole external contract itself (a user's clone has no copy of the
 * contract): every command with its flags and exit codes, config key and default, metric, endpoint
 * and parameter, public table and column, and environment variable that the contract fixes has its
 * place in docs/. The names below are the contract's, copied here on purpose: the other docs tests
 * check the docs against the code, so something the code dropped would vanish from both unnoticed.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (path: string): string => readFileSync(path, "utf8");
const cli = read("docs/reference/cli.md");
const configuration = read("docs/configuration.md");
const metrics = read("docs/reference/metrics.md");
const http = read("docs/reference/http.md");
const database = read("docs/reference/database.md");
const operations = read("docs/operations.md");
const semantics = read("docs/reference/sync-semantics.md");
const consumers = read("docs/consumers.md");

/** The part of a page under a heading, up to the next heading of the same or a higher level. */
function under(page: string, heading: string): string {
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) return "";
  const level = heading.indexOf(" ");
  const rest = page.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level}} `, "m"));
  return end < 0 ? rest : rest.slice(0, end);
}

/**
 * The contract's commands: each one's flags and the exit codes it names. Every command that reads
 * the config takes `--config`; `demo` and `simulate` read none.
 */
const NO_CONFIG = new Set(["demo", "simulate"]);
const COMMANDS: Record<string, { flags: string[]; exits: number[] }> = {
  run: { flags: [], exits: [0] },
  sync: { flags: ["--mirror", "--full", "--dry-run", "--allow-mass-delete", "--json"], exits: [0, 1, 2] },
  status: { flags: ["--json"], exits: [0] },
  check: { flags: [], exits: [0, 1, 2] },
  demo: { flags: [], exits: [0] },
  simulate: { flags: ["--port", "--seed", "--users", "--docs"], exits: [0] },
  history: { flags: ["--mirror", "--limit", "--json"], exits: [0, 2] },
  problems: { flags: ["--mirror", "--json"], exits: [0, 2] },
  pause: { flags: ["--mirror"], exits: [0, 2] },
  resume: { flags: ["--mirror"], exits: [0, 2] },
  trigger: { flags: ["--mirror", "--full"], exits: [0, 2] },
  "approve-sweep": { flags: ["--mirror"], exits: [0, 1, 2] },
  init: { flags: ["--simulator"], exits: [0, 1, 2] },
  plan: { flags: ["--json"], exits: [0, 1, 2, 3] },
  apply: { flags: ["--adopt", "--prune"], exits: [0, 1, 2] },
  "copy-store": { flags: ["--from"], exits: [0, 1, 2] },
  changes: { flags: [], exits: [0] },
  search: { flags: [], exits: [0] },
  reindex: { flags: [], exits: [0] },
};

describe("docs/reference/cli.md", () => {
  it.each(Object.entries(COMMANDS))("documents %s: its flags and exit codes", (command, { flags, exits }) => {
    const section = under(cli, `### \`${command}\``);
    expect(section, `no section for ${command}`).not.toBe("");
    for (const flag of NO_CONFIG.has(command) ? flags : [...flags, "--config"])
      expect(section).toContain(`\`${flag}`);
    const exitLine = section.split("\n").find((line) => line.startsWith("Exit: ")) ?? "";
    const documented = [...exitLine.matchAll(/(?:^Exit: |; )(\d)\b/g)].map((m) => Number(m[1]));
    expect(documented).toEqual(expect.arrayContaining(exits));
  });
});

/** The contract's config keys, with the defaults it states. */
const KEYS: Record<string, string | undefined> = {
  "api.base_url": undefined,
  "api.token_env": '"SYNCMIRROR_API_TOKEN"',
  "api.timeout_seconds": "60",
  "api.max_attempts": "6",
  "database.path": undefined,
  "database.url_env": undefined,
  "database.lease_seconds": "60",
  "http.listen": '"0.0.0.0:9464"',
  "http.token_env": '"SYNCMIRROR_HTTP_TOKEN"',
  "search.enabled": undefined,
  "defaults.incremental_cron": '"*/15 * * * *"',
  "defaults.full_cron": '"0 3 * * *"',
  "defaults.timezone": '"UTC"',
  "defaults.since_overlap_seconds": "300",
  "defaults.poll_initial_seconds": "5",
  "defaults.poll_max_seconds": "60",
  "defaults.run_timeout_minutes": "240",
  "defaults.continue_incomplete": "0",
  "defaults.continue_message": '"Continue where you stopped and finish the task."',
  "defaults.delete_after_missed_full": "1",
  "defaults.max_delete_fraction": "0.5",
  "defaults.inaccessible_grace_hours": "72",
  "history.keep_days": "90",
  max_concurrent_mirrors: undefined,
  manage_sync_configs: "false",
  "mirrors[].name": undefined,
  "mirrors[].sync_config_id": undefined,
  "mirrors[].sync_config.name": undefined,
  "mirrors[].sync_config.instructions": undefined,
  "mirrors[].sync_config.servers": undefined,
  "mirrors[].sync_config.users": undefined,
  "mirrors[].sync_config.all_users": undefined,
};

describe("docs/configuration.md", () => {
  it.each(Object.entries(KEYS))("documents %s with the contract's default", (key, fallback) => {
    const section = under(configuration, `${key.includes(".") ? "###" : "##"} \`${key}\``);
    expect(section, `no section for ${key}`).not.toBe("");
    if (fallback !== undefined) expect(section).toContain(`- Default: \`${fallback}\``);
  });

  it("says every key of defaults may be overridden per mirror", () => {
    const overrides = under(configuration, "### Per-mirror overrides");
    for (const key of Object.keys(KEYS).filter((k) => k.startsWith("defaults."))) {
      expect(overrides).toContain(`[\`${key.slice("defaults.".length)}\`]`);
    }
  });
});

/** The contract's metrics: type and labels (those in its table), or labels alone. */
const METRICS: [name: string, type: string | undefined, labels: string[]][] = [
  ["syncmirror_resources", "gauge", ["mirror"]],
  ["syncmirror_resources_upserted_total", "counter", ["mirror", "source_type"]],
  ["syncmirror_resources_unchanged_total", "counter", ["mirror", "source_type"]],
  ["syncmirror_resources_deleted_total", "counter", ["mirror"]],
  ["syncmirror_access_revoked_total", "counter", ["mirror"]],
  ["syncmirror_triggers_total", "counter", ["mirror", "mode", "outcome"]],
  ["syncmirror_runs_total", "counter", ["mirror", "status"]],
  ["syncmirror_sources_total", "counter", ["mirror", "source_type", "status"]],
  ["syncmirror_skipped_pairs", "gauge", ["mirror", "reason"]],
  ["syncmirror_sweeps_held_total", "counter", ["mirror"]],
  ["syncmirror_held_revocations", "gauge", ["mirror"]],
  ["syncmirror_pairs_awaiting_baseline", "gauge", ["mirror"]],
  ["syncmirror_last_success_timestamp_seconds", "gauge", ["mirror", "mode"]],
  ["syncmirror_sync_duration_seconds", "histogram", ["mirror", "mode"]],
  ["syncmirror_api_requests_total", "counter", ["method", "route", "code"]],
  ["syncmirror_api_request_duration_seconds", "histogram", ["method", "route"]],
  ["syncmirror_mirror_held", undefined, ["mirror"]],
  ["syncmirror_lease_takeovers_total", undefined, ["mirror"]],
  ["syncmirror_ticks_skipped_total", undefined, ["reason"]],
  ["syncmirror_problems", undefined, ["mirror", "kind"]],
  ["syncmirror_mirror_paused", undefined, ["mirror"]],
];

describe("docs/reference/metrics.md", () => {
  it.each(METRICS)("documents %s", (name, type, labels) => {
    const row = metrics.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
    expect(row, `no row for ${name}`).toBeDefined();
    const [, rowType = "", rowLabels = ""] = row?.split(" | ") ?? [];
    if (type !== undefined) expect(rowType).toBe(type);
    for (const label of labels) expect(rowLabels).toContain(`\`${label}\``);
  });
});

/** The contract's endpoints, each with the query parameters it names. */
const ENDPOINTS: [endpoint: string, params: string[]][] = [
  ["GET /metrics", []],
  ["GET /healthz", []],
  ["GET /readyz", []],
  ["GET /status", []],
  ["GET /v1/changes", ["after", "limit", "mirror", "wait"]],
  ["GET /v1/search", ["user", "q", "mirror", "limit"]],
  ["GET /v1/passes", ["mirror", "limit", "before"]],
  ["GET /v1/problems", []],
  ["POST /v1/mirrors/{name}/pause", []],
  ["POST /v1/mirrors/{name}/resume", []],
  ["POST /v1/mirrors/{name}/trigger", []],
  ["POST /v1/mirrors/{name}/approve-sweep", []],
  ["GET /", []],
];

describe("docs/reference/http.md", () => {
  it.each(ENDPOINTS)("documents %s", (endpoint, params) => {
    const at = http.indexOf(`\`${endpoint}`);
    expect(at, `${endpoint} is not named`).toBeGreaterThanOrEqual(0);
    // A parameter is named in the endpoint's own line or in the table under its heading.
    const near = http.slice(at, http.indexOf("\n#", at + 1) >>> 0);
    for (const param of params) expect(near).toMatch(new RegExp(`[?&\\[]${param}=|\\| \`${param}\` \\|`));
  });

  it("says which endpoints need the bearer token", () => {
    expect(http).toContain("`Authorization: Bearer <token>`");
    expect(http).toMatch(/loopback/);
  });
});

/** The contract's public tables and columns. */
const TABLES: Record<string, string[]> = {
  resources: [
    "key",
    "content_hash",
    "content_text",
    "content_format",
    "content_status",
    "title",
    "url",
    "type",
    "source_type",
    "server_instance_id",
    "native_id",
    "modified_at",
    "fetched_at",
    "fields",
    "metadata",
    "relations",
    "attachments",
    "provenance",
    "deleted_at",
  ],
  resource_access: ["mirror", "user_email", "key", "server_instance_id", "source", "last_seen_at"],
  changes: ["seq", "key", "op", "at", "upsert", "delete", "access"],
};

describe("docs/reference/database.md", () => {
  it.each(Object.entries(TABLES))("documents %s and its columns", (table, columns) => {
    const section = under(database, `## \`${table}\``);
    expect(section, `no section for ${table}`).not.toBe("");
    expect(columns.filter((c) => !section.includes(`\`${c}\``))).toEqual([]);
  });
});

describe("the rest of the contract", () => {
  it("documents the environment variables in docs/operations.md", () => {
    for (const name of [
      "SYNCMIRROR_CONFIG",
      "SYNCMIRROR_API_TOKEN",
      "SYNCMIRROR_HTTP_TOKEN",
      "SYNCMIRROR_HTTP_LISTEN",
      "SYNCMIRROR_DATABASE_URL",
    ]) {
      expect(operations).toContain(`\`${name}\``);
    }
  });

  it("documents every outcome of a pass in docs/reference/sync-semantics.md", () => {
    for (const outcome of ["succeeded", "partial", "failed", "refused"]) {
      expect(semantics).toContain(`| \`${outcome}\` |`);
    }
  });

  it("documents the NOTIFY channel in docs/consumers.md", () => {
    expect(consumers).toContain("syncmirror_changes");
  });
});
