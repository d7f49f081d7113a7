/**
 * docs/operations.md#upgrades: a database an older release wrote, opened by this one. Each fixture
 * in test/fixtures/upgrade/ was written by that release's own CLI (make-fixtures.ts, scenario.ts):
 * three mirrors after real passes, `live` killed just after its trigger POST, `dry` a
 * `sync --full --dry-run` cut short by a rejected token after one run was read, `held` with a
 * sweep the mass-delete guard held, then paused (where the release had pause). The test's
 * simulator is built like the one those last triggers reached and is sent the same two triggers,
 * so it knows their runs by the ids the database holds. Runs once, in the SQLite project, on
 * both stores.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  changeWorkspace,
  createConfigs,
  type FixtureMirror,
  MIRRORS,
  prepareWorkspace,
  simulatorOptions,
} from "../../fixtures/upgrade/scenario.js";
import type { TestDialect } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

const withPostgres = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const DIALECTS: TestDialect[] = withPostgres ? ["sqlite", "postgres"] : ["sqlite"];
const FIXTURES_DIR = join(import.meta.dirname, "..", "..", "fixtures", "upgrade");
const MIGRATIONS_DIR = join(import.meta.dirname, "..", "..", "..", "migrations");
const MIGRATIONS: Record<TestDialect, number> = {
  sqlite: readdirSync(join(MIGRATIONS_DIR, "sqlite")).filter((f) => f.endsWith(".sql")).length,
  postgres: readdirSync(join(MIGRATIONS_DIR, "postgres")).filter((f) => f.endsWith(".sql")).length,
};

interface Fixture {
  /** The release that wrote it: a commit of main. */
  commit: string;
  /** That release had `pause`, and `held` was paused with it. */
  paused: boolean;
  /** That release had `approve-sweep`, and recorded each held sweep for it. */
  approveSweep: boolean;
}

const FIXTURES = readdirSync(FIXTURES_DIR)
  .filter((file) => file.endsWith(".json"))
  .map((file) => JSON.parse(readFileSync(join(FIXTURES_DIR, file), "utf8")) as Fixture);
const CASES = FIXTURES.flatMap((fixture) =>
  DIALECTS.map((dialect) => [fixture.commit, dialect, fixture] as const),
);

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Puts the old release's database where the harness's config points, as that release left it. */
async function restore(harness: Harness, fixture: Fixture): Promise<void> {
  const sql = gunzipSync(
    readFileSync(join(FIXTURES_DIR, `${fixture.commit}.${harness.dialect}.sql.gz`)),
  ).toString();
  if (harness.dialect === "sqlite") {
    const db = new Database(harness.dbPath);
    db.exec(sql);
    db.close();
    return;
  }
  // The harness's database is cloned already migrated: emptied, it takes the old schema as dumped.
  const client = new pg.Client({ connectionString: harness.databaseUrl });
  await client.connect();
  try {
    await client.query(
      "DROP SCHEMA public CASCADE; DROP SCHEMA IF EXISTS drizzle CASCADE; CREATE SCHEMA public",
    );
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function writeConfig(harness: Harness, configs: Record<FixtureMirror, string>): void {
  writeFileSync(
    harness.configPath,
    stringify({
      api: { base_url: harness.sim.baseUrl, token_env: "SYNCMIRROR_TEST_TOKEN", timeout_seconds: 10 },
      database:
        harness.dialect === "postgres"
          ? { url_env: "SYNCMIRROR_TEST_MIRROR_DATABASE_URL" }
          : { path: harness.dbPath },
      http: { listen: "127.0.0.1:0" },
      // The passes in flight started when the fixture was made; the run timeout counts from then,
      // and the upgrade modelled comes moments after the old release stopped.
      defaults: { poll_initial_seconds: 0.01, poll_max_seconds: 0.05, run_timeout_minutes: 10_000_000 },
      // No mass-delete guard on dry: a dry run resumed as a real pass would delete what it held.
      mirrors: MIRRORS.map((mirror) => ({
        name: mirror,
        sync_config_id: configs[mirror],
        ...(mirror === "dry" ? { max_delete_fraction: 1 } : {}),
      })),
    }),
  );
}

/** The public tables as a reader sees them, every column. */
function publicTables(harness: Harness) {
  return {
    resources: harness.query("SELECT * FROM resources ORDER BY key"),
    resource_access: harness.query("SELECT * FROM resource_access ORDER BY mirror, user_email, key"),
    changes: harness.query<{ seq: number; key: string }>("SELECT * FROM changes ORDER BY seq"),
  };
}

/**
 * What the operator set and the passes left (pauses, held sweeps and approvals, sinces, the passes
 * in flight), in the tables the old release had, every column it had.
 */
const OPERATOR_TABLES: Record<string, string> = {
  mirror_state: "mirror",
  pairs: "mirror, user_email, server_instance_id",
  triggers: "id",
  runs: "sync_id",
  control_actions: "id",
  sweep_approvals: "id",
};

function operatorState(harness: Harness, columnsOf?: Record<string, Record<string, unknown>[]>) {
  const tables = harness.query<{ name: string }>(
    harness.dialect === "sqlite"
      ? "SELECT name FROM sqlite_master WHERE type = 'table'"
      : "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'",
  );
  const present = new Set(tables.map((t) => t.name));
  const state: Record<string, Record<string, unknown>[]> = {};
  for (const [table, order] of Object.entries(OPERATOR_TABLES)) {
    if (columnsOf ? !(table in columnsOf) : !present.has(table)) continue;
    const rows = harness.query<Record<string, unknown>>(`SELECT * FROM ${table} ORDER BY ${order}`);
    const columns = Object.keys(columnsOf?.[table]?.[0] ?? rows[0] ?? {});
    state[table] = rows.map((row) => Object.fromEntries(columns.map((c) => [c, row[c]])));
  }
  return state;
}

const triggerPosts = (harness: Harness) =>
  harness.sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-task").length;

interface SyncJson {
  mirrors: {
    mirror: string;
    outcome: string;
    mode: string;
    adopted?: boolean;
    counts: Record<string, number>;
    finished_first?: { mode: string; outcome: string; dry_run?: unknown };
  }[];
}

async function syncJson(
  harness: Harness,
  mirror: FixtureMirror,
  args: string[] = [],
  code = 0,
): Promise<SyncJson["mirrors"][number]> {
  const result = await harness.cli(["sync", "--mirror", mirror, "--json", ...args]);
  expect(result.code, result.stderr).toBe(code);
  const [summary] = (JSON.parse(result.stdout) as SyncJson).mirrors;
  if (!summary) throw new Error(`sync --mirror ${mirror} printed no pass`);
  return summary;
}

describe.each(CASES)(
  "a database written by %s, on %s, opened by this release",
  (_commit, dialect, fixture) => {
    it("keeps the mirror byte for byte, resumes both passes in flight without a new trigger, finishes the dry run as one", async () => {
      const harness = await createHarness({ dialect, sim: simulatorOptions(2) });
      h = harness;
      const configs = createConfigs(harness.sim);
      prepareWorkspace(harness.sim);
      changeWorkspace(harness.sim);
      writeConfig(harness, configs);
      await restore(harness, fixture);
      const before = publicTables(harness);
      const state = operatorState(harness);
      expect(before.resources.length).toBeGreaterThan(0);

      // The two triggers the old release sent last, sent again: the simulator answers with the ids it
      // gave that release.
      const inFlight = harness.query<{
        mirror: FixtureMirror;
        since: string | null;
        trigger_id: string | null;
      }>("SELECT mirror, since, trigger_id FROM triggers WHERE state <> 'done' ORDER BY id");
      expect(inFlight.map((t) => t.mirror)).toEqual(["live", "dry"]);
      for (const t of inFlight) {
        const response = await fetch(`${harness.sim.baseUrl}/sync-task`, {
          method: "POST",
          headers: { authorization: `Bearer ${harness.sim.token}`, "content-type": "application/json" },
          body: JSON.stringify({ sync_config_id: configs[t.mirror], ...(t.since ? { since: t.since } : {}) }),
        });
        const { trigger_id } = (await response.json()) as { trigger_id: string };
        if (t.trigger_id) expect(trigger_id).toBe(t.trigger_id);
      }
      harness.sim.requests.length = 0;

      // Migrating alone changes no row a reader or an operator sees.
      const status = await harness.cli(["status", "--json"]);
      expect(status.code, status.stderr).toBe(0);
      const applied = harness.query<{ n: number }>(
        `SELECT count(*) AS n FROM ${harness.dialect === "sqlite" ? "" : "drizzle."}__drizzle_migrations`,
      );
      expect(Number(applied[0]?.n)).toBe(MIGRATIONS[harness.dialect]);
      expect(publicTables(harness)).toEqual(before);
      expect(operatorState(harness, state)).toEqual(state);
      const mirrors = (
        JSON.parse(status.stdout) as {
          mirrors: { mirror: string; paused: boolean; held_revocations: number }[];
        }
      ).mirrors;
      expect(mirrors.find((m) => m.mirror === "held")).toMatchObject({
        paused: fixture.paused,
        held_revocations: 24,
      });

      // One document of live's edited since: the resumed pass writes it as the next change.
      const edited = harness.sim.docs
        .list()
        .find((d) => d.server_instance_id === harness.sim.servers[0]?.server_instance_id);
      if (!edited) throw new Error("no document on live's server");
      harness.sim.docs.edit(edited.docId, { modifiedAt: "2026-03-03T09:00:00Z" });

      const live = await syncJson(harness, "live");
      expect(live).toMatchObject({ mode: "incremental", outcome: "succeeded", adopted: true });
      expect(triggerPosts(harness)).toBe(0);
      const liveRun = harness.sim.runs.list().find((r) => r.sync_config_id === configs.live);
      expect(liveRun?.since).toBe(inFlight[0]?.since);

      const dry = await syncJson(harness, "dry");
      expect(dry).toMatchObject({ outcome: "succeeded", counts: { deleted: 0, access_revoked: 0 } });
      expect(dry.finished_first).toMatchObject({ mode: "full", outcome: "succeeded" });
      const history = JSON.parse((await harness.cli(["history", "--json"])).stdout) as {
        passes: { mirror: string; trigger_id: string | null; dry_run: boolean }[];
      };
      const dryRun = history.passes.find(
        (p) => p.trigger_id !== null && p.trigger_id === inFlight[1]?.trigger_id,
      );
      expect(dryRun?.dry_run).toBe(true);

      const after = publicTables(harness);
      const changedKeys = new Set([edited.key]);
      expect(after.resources.filter((r) => !changedKeys.has(r.key as string))).toEqual(
        before.resources.filter((r) => !changedKeys.has(r.key as string)),
      );
      expect(after.resources.find((r) => r.key === edited.key)?.content_hash).not.toBe(
        before.resources.find((r) => r.key === edited.key)?.content_hash,
      );
      // The resumed pass saw live's access again: when is all it may change.
      const unseen = (rows: Record<string, unknown>[]) => rows.map(({ last_seen_at, ...row }) => row);
      expect(unseen(after.resource_access)).toEqual(unseen(before.resource_access));
      const notLive = (rows: Record<string, unknown>[]) => rows.filter((r) => r.mirror !== "live");
      expect(notLive(after.resource_access)).toEqual(notLive(before.resource_access));
      // The feed goes on from the last seq the old release wrote: old rows untouched, new ones next.
      const lastSeq = Number(before.changes.at(-1)?.seq);
      expect(after.changes.slice(0, before.changes.length)).toEqual(before.changes);
      expect(after.changes.slice(before.changes.length).map((c) => Number(c.seq))[0]).toBe(lastSeq + 1);
      expect(after.changes.slice(before.changes.length).map((c) => c.key)).toEqual([edited.key]);

      // held: its sweep still held for approve-sweep, its pause (where there was one) still on.
      const heldRows = (tables: Record<string, Record<string, unknown>[]>) =>
        Object.fromEntries(
          Object.entries(tables).map(([table, rows]) => [table, rows.filter((r) => r.mirror === "held")]),
        );
      expect(heldRows(operatorState(harness, state))).toEqual(heldRows(state));
      if (!fixture.approveSweep) {
        // That release kept no per-pair record of a held sweep, only its count (status shows it): the
        // next full pass holds it again, revoking nothing, and approve-sweep can then release it.
        const again = await syncJson(harness, "held", ["--full"], 1);
        expect(again).toMatchObject({
          outcome: "partial",
          counts: { access_revoked: 0, deleted: 0, sweeps_held: 2 },
        });
      }
      const approve = await harness.cli(["approve-sweep", "--mirror", "held", "--json"]);
      expect(approve.code, approve.stdout).toBe(0);
      expect(JSON.parse(approve.stdout)).toMatchObject({ mirror: "held", pairs: 2, up_to: 24 });
    });
  },
);
