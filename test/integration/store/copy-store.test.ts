/**
 * `syncmirror copy-store` through the real CLI and simulator (docs/reference/cli.md): a SQLite mirror
 * synced for a while (full, incremental, a full that tombstones and revokes) is copied into
 * PostgreSQL, passes go on there, and the result equals a PostgreSQL-only twin that ran the same
 * passes over an identical simulator. "Equal": db-snapshot's comparison (every public column but
 * local-clock ones, access with its miss counts, pairs with their watermarks), and the change
 * feed keeps every copied seq as it was, numbers later changes after them, and holds for each key
 * the same ops in the same order as the twin's (seq values themselves differ where the twins'
 * concurrent runs committed pages in another order).
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { readMigrationFiles } from "drizzle-orm/migrator";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { canonicalJson } from "../../../src/simulator/canonical-json.js";
import { COPIED_TABLES, describeTable } from "../../../src/store/copy-tables.js";
import { migrationsDir, readJournal } from "../../../src/store/migrations-dir.js";
import { openDatabase } from "../../../src/store/sqlite/open.js";
import { type SpawnOptions, spawnCli } from "../../helpers/daemon.js";
import {
  type DatabaseReader,
  type DbSnapshot,
  databaseProblems,
  snapshot,
  snapshotDiff,
} from "../../helpers/db-snapshot.js";
import { queryPostgres } from "../../helpers/dialect.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { closeSync } from "../../helpers/pg-sync.js";
import { createTestDatabase, postgresForTests, type TestDatabase } from "../../helpers/postgres.js";
import { triggerPosts } from "../../helpers/requests.js";
import { CLOCK_START } from "../../helpers/twins.js";
import { buildOnce } from "../daemon/setup.js";

const TARGET_URL_ENV = "SYNCMIRROR_COPY_TARGET_URL";

interface Setup {
  /** Synced on SQLite, then copied and synced on PostgreSQL through `pgConfig`. */
  moved: Harness;
  /** The same passes on PostgreSQL from the start. */
  twin: Harness;
  target: TestDatabase;
  pgConfig: string;
  /** The target, read like a harness. */
  copied: DatabaseReader;
}

let setup: Setup | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  if (!setup) return;
  await setup.moved.close();
  await setup.twin.close();
  closeSync(setup.target.url);
  await setup.target.release();
  setup = undefined;
});

async function createSetup(sim: Record<string, unknown>, target?: TestDatabase): Promise<Setup> {
  const options = { sim: { seed: 7, clock: { start: CLOCK_START }, ...sim } };
  const moved = await createHarness({ ...options, dialect: "sqlite" });
  const twin = await createHarness({ ...options, dialect: "postgres" });
  const db = target ?? (await createTestDatabase());
  const config = parse(readFileSync(moved.configPath, "utf8"));
  config.database = { url_env: TARGET_URL_ENV };
  const pgConfig = join(moved.dir, "postgres.yaml");
  writeFileSync(pgConfig, stringify(config));
  moved.env[TARGET_URL_ENV] = db.url;
  setup = {
    moved,
    twin,
    target: db,
    pgConfig,
    copied: {
      dialect: "postgres",
      dbPath: "",
      query: (sql, ...params) => queryPostgres(db.url, sql, params),
    },
  };
  return setup;
}

/** The CLI on the moved mirror's PostgreSQL config. */
async function cliWith(
  s: Setup,
  args: string[],
  options: SpawnOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli([...args, "--config", s.pgConfig], s.moved.env, options);
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** One pass through the CLI; it must succeed. */
async function pass(run: () => Promise<{ code: number | null; stdout: string; stderr: string }>) {
  const r = await run();
  expect(r.code, r.stdout + r.stderr).toBe(0);
}

/** The same upstream change on both simulators: edits, removals, an addition, and a user who leaves. */
function changeUpstream(h: Harness, round: number, leaver?: string): void {
  const docs = pickDocs(h, 6 + round, () => true).slice(round);
  for (const d of docs.slice(0, 3)) h.sim.docs.edit(d.docId);
  for (const d of docs.slice(3, 5)) h.sim.docs.remove(d.docId);
  const server = h.sim.servers[0]?.server_instance_id as string;
  h.sim.docs.add({
    server_instance_id: server,
    visibleTo: [h.sim.users[0] as string],
    title: `added ${round}`,
  });
  if (leaver) h.sim.people.leaveProject(leaver);
}

/** For each key, its ops in feed order. */
function opsByKey(reader: Pick<Harness, "query">): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const r of reader.query<{ key: string; op: string }>("SELECT key, op FROM changes ORDER BY seq"))
    out[r.key] = [...(out[r.key] ?? []), r.op];
  return out;
}

const JSON_COLUMNS = ["fields", "metadata", "relations", "attachments", "provenance"];

/**
 * A snapshot with the two stores' spellings made one: jsonb orders object keys its own way, and
 * PostgreSQL keeps an export time as a time (`...:13Z` and `...:13.000Z` are one instant).
 */
function sameSpelling(snap: DbSnapshot): DbSnapshot {
  const resources = snap.resources.map((row) => {
    const out = { ...row };
    for (const c of JSON_COLUMNS)
      if (typeof out[c] === "string") out[c] = canonicalJson(JSON.parse(out[c] as string));
    if (typeof out.modified_at === "string") out.modified_at = new Date(out.modified_at).toISOString();
    return out;
  });
  return { ...snap, resources };
}

const feed = (reader: Pick<Harness, "query">, afterSeq = 0) =>
  reader.query<{ seq: number; key: string; op: string; at: string }>(
    "SELECT seq, key, op, at FROM changes WHERE seq > ? ORDER BY seq",
    afterSeq,
  );

/**
 * Every copied table, row for row and column by column, with the two stores' spellings made one:
 * JSON as canonical text, times as instants, booleans as booleans (SQLite keeps 0 and 1).
 */
function everyCopiedRow(reader: Pick<Harness, "query">): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const table of COPIED_TABLES.map(describeTable)) {
    const rows = reader.query<Record<string, unknown>>(
      `SELECT ${table.columns.map((c) => c.name).join(", ")} FROM ${table.name}`,
    );
    out[table.name] = rows
      .map((row) =>
        JSON.stringify(
          table.columns.map(({ name, kind }) => {
            const v = row[name];
            if (v === null || v === undefined) return null;
            if (kind === "json") return canonicalJson(typeof v === "string" ? JSON.parse(v) : v);
            if (kind === "time") return new Date(String(v)).toISOString();
            if (kind === "boolean") return v === true || v === 1;
            if (kind === "number") return Number(v);
            return v;
          }),
        ),
      )
      .sort();
  }
  return out;
}

describe.runIf(await postgresForTests())("syncmirror copy-store", () => {
  it("moves a SQLite mirror to PostgreSQL: later passes there end equal to a PostgreSQL-only twin, the feed's positions kept", async () => {
    const s = await createSetup({ docs: 80 });
    const { moved, twin } = s;
    const [, , leaver] = moved.sim.users;
    // The mirror that moves runs the real CLI; its twin runs the same passes in this process.
    const both = async (args: string[], before?: (h: Harness) => void) => {
      before?.(moved);
      before?.(twin);
      await pass(() => moved.cli(args));
      expect((await twin.sync({ full: args.includes("--full") })).outcome).toBe("succeeded");
    };
    await both(["sync"]);
    await both(["sync"], (h) => changeUpstream(h, 0, leaver));
    await both(["sync", "--full"]);
    await both(["sync"], (h) => changeUpstream(h, 1));
    const sqliteFeed = feed(moved);
    expect(sqliteFeed.map((c) => c.op)).toEqual(expect.arrayContaining(["upsert", "access", "delete"]));

    const copy = await cliWith(s, ["copy-store", "--from", moved.dbPath]);
    expect(copy.code, copy.stderr).toBe(0);
    const lastSeq = sqliteFeed.at(-1)?.seq ?? 0;
    expect(copy.stdout).toContain(`the change feed continues after seq ${lastSeq}`);
    // The copy is the SQLite mirror: its feed row for row, its state, its schedule.
    expect(feed(s.copied)).toEqual(sqliteFeed);
    expect(snapshotDiff(sameSpelling(snapshot(s.copied)), sameSpelling(snapshot(moved)))).toEqual([]);
    expect(databaseProblems(s.copied)).toEqual([]);
    const sqliteStatus = JSON.parse((await moved.cli(["status", "--json"])).stdout);
    const pgStatus = JSON.parse((await cliWith(s, ["status", "--json"])).stdout);
    expect(pgStatus).toEqual(sqliteStatus);

    // Passes go on on PostgreSQL: an incremental, then a full that sweeps what the copy carried.
    for (const h of [moved, twin]) changeUpstream(h, 2);
    await pass(() => cliWith(s, ["sync"]));
    expect((await twin.sync()).outcome).toBe("succeeded");
    await pass(() => cliWith(s, ["sync", "--full"]));
    expect((await twin.sync({ full: true })).outcome).toBe("succeeded");

    expect(databaseProblems(s.copied)).toEqual([]);
    expect(snapshotDiff(snapshot(s.copied), snapshot(twin))).toEqual([]);
    expect(opsByKey(s.copied)).toEqual(opsByKey(twin));
    const after = feed(s.copied, lastSeq);
    expect(after.length).toBeGreaterThan(0);
    expect(feed(s.copied).slice(0, sqliteFeed.length)).toEqual(sqliteFeed);
    expect(after.every((c, i) => c.seq > (after[i - 1]?.seq ?? lastSeq))).toBe(true);
  });

  it("copies the console's state row for row (problems, a held sweep approved, a failed source's error, pause and resume), and the next full pass on PostgreSQL applies the approved sweep", async () => {
    const s = await createSetup({ docs: 40 });
    const { moved } = s;
    const mirror = "main";
    await pass(() => moved.cli(["sync"]));
    await pass(() => moved.cli(["pause", "--mirror", mirror]));
    await pass(() => moved.cli(["resume", "--mirror", mirror]));
    moved.sim.setOutcome({ user: moved.sim.users[1] }, { task: "FAILED", error: "boom upstream", times: 1 });
    const removed = pickDocs(moved, 25, () => true);
    for (const d of removed) moved.sim.docs.remove(d.docId);
    expect((await moved.cli(["sync", "--full"])).code).toBe(1);
    await pass(() => moved.cli(["approve-sweep", "--mirror", mirror]));
    const rows = everyCopiedRow(moved);
    for (const table of ["problems", "pass_errors", "sweep_approvals", "control_actions", "schedules"])
      expect(rows[table]?.length, table).toBeGreaterThan(0);

    const copy = await cliWith(s, ["copy-store", "--from", moved.dbPath]);
    expect(copy.code, copy.stderr).toBe(0);
    expect(everyCopiedRow(s.copied)).toEqual(rows);
    for (const args of [
      ["history", "--json"],
      ["problems", "--json"],
      ["status", "--json"],
    ]) {
      const onSqlite = await moved.cli(args);
      const onPostgres = await cliWith(s, args);
      expect(onPostgres.code, onPostgres.stderr).toBe(onSqlite.code);
      expect(JSON.parse(onPostgres.stdout), args[0]).toEqual(JSON.parse(onSqlite.stdout));
    }

    await pass(() => cliWith(s, ["sync", "--full"]));
    const live = (reader: Pick<Harness, "query">) =>
      reader.query<{ key: string }>("SELECT key FROM resources WHERE deleted_at IS NULL ORDER BY key");
    const gone = new Set(removed.map((d) => d.key));
    expect(live(s.copied).some((r) => gone.has(r.key))).toBe(false);
    expect(JSON.parse((await cliWith(s, ["problems", "--json"])).stdout).problems).toEqual([]);
  });

  it("copies a pass left in flight (an empty, never migrated target); the next sync on PostgreSQL resumes it without a second trigger", async () => {
    const s = await createSetup({ docs: 1000 }, await createTestDatabase({ empty: true }));
    const { moved, twin } = s;
    const crashed = await moved.cli(["sync"], { SYNCMIRROR_CRASH_AT: "between-pages:2" });
    expect(crashed.code, crashed.stderr).toBeNull();
    expect(moved.query("SELECT state FROM triggers")).toEqual([{ state: "active" }]);

    const copy = await cliWith(s, ["copy-store", "--from", moved.dbPath]);
    expect(copy.code, copy.stderr).toBe(0);
    await pass(() => cliWith(s, ["sync"]));
    expect((await twin.sync()).outcome).toBe("succeeded");

    expect(triggerPosts(moved)).toBe(1);
    expect(s.copied.query("SELECT state FROM triggers")).toEqual([{ state: "done" }]);
    expect(databaseProblems(s.copied)).toEqual([]);
    expect(snapshotDiff(snapshot(s.copied), snapshot(twin))).toEqual([]);
  });

  it("copies whole when the reader of its output goes at once; then refuses the target, no longer empty (exit 1, naming what is there), and leaves it as it was", async () => {
    const s = await createSetup({ docs: 20 });
    await pass(() => s.moved.cli(["sync"]));
    // `| true`: the reader is gone before the first line is written.
    const closedReader = { wrap: ["bash", "-c", 'set -o pipefail; "$@" | true', "bash"] };
    await pass(() => cliWith(s, ["copy-store", "--from", s.moved.dbPath], closedReader));
    for (const table of ["resources", "resource_access", "changes"]) {
      const count = (db: DatabaseReader) =>
        Number(db.query<{ n: number | string }>(`SELECT count(*) AS n FROM ${table}`)[0]?.n);
      expect(count(s.copied), table).toBe(count(s.moved));
    }
    const before = snapshot(s.copied);

    const again = await cliWith(s, ["copy-store", "--from", s.moved.dbPath]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /the PostgreSQL database in \$SYNCMIRROR_COPY_TARGET_URL is not empty \(resources: \d+ rows, resource_access: \d+ rows, changes: \d+ rows/,
    );
    expect(again.stderr).toMatch(/nothing was copied\. Create a new database \(createdb\)/);
    expect(again.stderr).not.toContain(s.target.url);
    expect(snapshotDiff(snapshot(s.copied), before)).toEqual([]);
  });

  it("refuses a target migrated by a newer syncmirror with exit 2, naming both schema versions, and copies nothing", async () => {
    const s = await createSetup({ docs: 5 });
    await pass(() => s.moved.cli(["sync"]));
    const journal = readJournal("postgres").entries;
    const target = new pg.Client({ connectionString: s.target.url });
    await target.connect();
    try {
      await target.query(
        "INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-the-future', $1)",
        [(journal.at(-1)?.when ?? 0) + 1000],
      );
      const refused = await cliWith(s, ["copy-store", "--from", s.moved.dbPath]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`has ${journal.length + 1} schema migration(s) applied`);
      expect(refused.stderr).toContain(`this syncmirror's ${journal.length} (up to ${journal.at(-1)?.tag})`);
      expect(s.copied.query("SELECT 1 FROM resources")).toEqual([]);
    } finally {
      await target.query("DELETE FROM drizzle.__drizzle_migrations WHERE hash = 'from-the-future'");
      await target.end();
    }
  });

  it("numbers the feed on PostgreSQL after every seq the SQLite mirror ever handed out, even one its consumers trimmed away", async () => {
    const s = await createSetup({ docs: 10 });
    await pass(() => s.moved.cli(["sync"]));
    const handedOut = feed(s.moved).at(-1)?.seq ?? 0;
    expect(handedOut).toBeGreaterThan(0);
    // Every consumer is at the end of the feed, so the operator trims what they all processed.
    const sqlite = new Database(s.moved.dbPath);
    sqlite.exec("DELETE FROM changes");
    sqlite.close();

    const copy = await cliWith(s, ["copy-store", "--from", s.moved.dbPath]);
    expect(copy.code, copy.stderr).toBe(0);
    expect(copy.stdout).toContain(`the change feed continues after seq ${handedOut}`);
    changeUpstream(s.moved, 0);
    await pass(() => cliWith(s, ["sync"]));
    // A consumer that kept `handedOut` reads every later change.
    const later = feed(s.copied);
    expect(later.length).toBeGreaterThan(0);
    expect(feed(s.copied, handedOut)).toEqual(later);
  });

  it("refuses bad usage with exit 2: a SQLite config, no --from, and at --from no file, a directory, an empty file, a non-SQLite file or another program's SQLite database (left as it was); exit 1 while the SQLite mirror is in use", async () => {
    const s = await createSetup({ docs: 5 });
    await pass(() => s.moved.cli(["sync"]));

    const sqliteConfig = await s.moved.cli(["copy-store", "--from", s.moved.dbPath]);
    expect(sqliteConfig.code).toBe(2);
    expect(sqliteConfig.stderr).toMatch(
      /names a SQLite database \(database\.path\): copy-store copies into PostgreSQL/,
    );
    const noFrom = await cliWith(s, ["copy-store"]);
    expect(noFrom.code).toBe(2);
    expect(noFrom.stderr).toContain("--from SQLITE_PATH is required");
    const noPath = await cliWith(s, ["copy-store", "--from"]);
    expect(noPath.code).toBe(2);
    expect(noPath.stderr).toContain("--from needs a value");
    const missing = await cliWith(s, ["copy-store", "--from", join(s.moved.dir, "nothing-here.db")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`no SQLite mirror at ${join(s.moved.dir, "nothing-here.db")}`);
    // A file that is not a database is named as such, and left as it was: no lock file, its mode kept.
    const notDb = join(s.moved.dir, "notes.txt");
    writeFileSync(notDb, "hello\n", { mode: 0o644 });
    chmodSync(notDb, 0o644);
    const wrongFile = await cliWith(s, ["copy-store", "--from", notDb]);
    expect(wrongFile.code).toBe(2);
    expect(wrongFile.stderr).toContain(`${notDb} is not a SQLite database`);
    expect(statSync(notDb).mode & 0o777).toBe(0o644);
    expect(readdirSync(s.moved.dir).filter((f) => f.startsWith("notes.txt"))).toEqual(["notes.txt"]);
    // A directory, an empty file and another program's SQLite database: one line each, exit 2,
    // and the file left as it was (no schema written into it).
    const folder = join(s.moved.dir, "a-folder");
    mkdirSync(folder);
    const emptyFile = join(s.moved.dir, "empty.db");
    writeFileSync(emptyFile, "");
    const foreign = join(s.moved.dir, "foreign.db");
    const other = new Database(foreign);
    other.exec("CREATE TABLE notes (body TEXT)");
    other.close();
    const foreignBytes = readFileSync(foreign);
    for (const [path, says] of [
      [folder, `${folder} is a directory, not a SQLite database file`],
      [emptyFile, `${emptyFile} is an empty file: it holds no mirror`],
      [foreign, `${foreign} is a SQLite database but not a syncmirror mirror`],
    ] as const) {
      const r = await cliWith(s, ["copy-store", "--from", path]);
      expect(r.code, path).toBe(2);
      expect(r.stderr).toBe(`syncmirror: ${says}: --from names the database.path of the mirror to copy\n`);
    }
    expect(statSync(emptyFile).size).toBe(0);
    expect(readFileSync(foreign).equals(foreignBytes)).toBe(true);

    const held = openDatabase(s.moved.dbPath, { lock: true });
    try {
      const busy = await cliWith(s, ["copy-store", "--from", s.moved.dbPath]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toMatch(/is in use by another syncmirror process .*stop it, then copy/);
    } finally {
      held.close();
    }
    expect(s.copied.query("SELECT 1 FROM resources")).toEqual([]);
  });

  it("leaves a mirror of an older syncmirror as it was when the copy is refused (a target not empty, one that does not exist), so that syncmirror still opens it; into an empty target it copies", async () => {
    const s = await createSetup({ docs: 5 });
    await pass(() => s.moved.cli(["sync"]));
    await pass(() => cliWith(s, ["copy-store", "--from", s.moved.dbPath]));
    const older = join(s.moved.dir, "older.db");
    const journal = readJournal("sqlite").entries;
    const sqlite = new Database(older);
    sqlite.exec(
      "CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
    );
    for (const m of readMigrationFiles({ migrationsFolder: migrationsDir("sqlite") }).slice(
      0,
      journal.length - 3,
    )) {
      for (const statement of m.sql) sqlite.exec(statement);
      sqlite
        .prepare("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)")
        .run(m.hash, m.folderMillis);
    }
    sqlite.close();
    const asWritten = readFileSync(older);

    const notEmpty = await cliWith(s, ["copy-store", "--from", older]);
    expect(notEmpty.code, notEmpty.stderr).toBe(1);
    expect(readFileSync(older).equals(asWritten)).toBe(true);
    s.moved.env[TARGET_URL_ENV] = `${s.target.url}_missing`;
    const missing = await cliWith(s, ["copy-store", "--from", older]);
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toContain("does not exist");
    expect(readFileSync(older).equals(asWritten)).toBe(true);

    const empty = await createTestDatabase();
    s.moved.env[TARGET_URL_ENV] = empty.url;
    try {
      const copied = await cliWith(s, ["copy-store", "--from", older]);
      expect(copied.code, copied.stderr).toBe(0);
      expect(copied.stdout).toContain("resources: 0 rows");
    } finally {
      s.moved.env[TARGET_URL_ENV] = s.target.url;
      closeSync(empty.url);
      await empty.release();
    }
  });

  it("says what is wrong with a damaged or unusable --from file in one line naming the file, never telling to change database.path (the target's config has none), and copies nothing", async () => {
    const s = await createSetup({ docs: 20 });
    await pass(() => s.moved.cli(["sync"]));
    const damaged = (
      name: string,
      damage: (bytes: Buffer, pageSize: number, resourcesRoot: number) => void,
    ) => {
      const sqlite = new Database(s.moved.dbPath, { readonly: true });
      const pageSize = Number(sqlite.pragma("page_size", { simple: true }));
      const { rootpage } = sqlite
        .prepare("SELECT rootpage FROM sqlite_master WHERE name = 'resources'")
        .get() as {
        rootpage: number;
      };
      sqlite.close();
      const bytes = readFileSync(s.moved.dbPath);
      damage(bytes, pageSize, rootpage);
      const path = join(s.moved.dir, name);
      writeFileSync(path, bytes);
      return path;
    };
    // Its first bytes are SQLite's, the rest of its header is not.
    const badHeader = damaged("bad-header.db", (bytes) => bytes.fill(0xff, 16, 100));
    // Opening and migrating it read nothing of `resources`: only the copy finds its pages gone.
    const badTable = damaged("bad-table.db", (bytes, size, root) =>
      bytes.fill(0, (root - 1) * size, root * size),
    );
    // The lock taken beside the file cannot be: a directory stands where it goes.
    const lockedOut = damaged("locked-out.db", () => {});
    mkdirSync(`${lockedOut}.lock`);
    const held = openDatabase(s.moved.dbPath, { lock: true });
    try {
      for (const [path, code, says] of [
        [badHeader, 2, `${badHeader} is not a SQLite database`],
        [badTable, 1, `the SQLite mirror ${badTable} is corrupt`],
        [lockedOut, 2, `${lockedOut}.lock is a directory, not a file`],
        [s.moved.dbPath, 1, "stop it, then copy"],
      ] as const) {
        const r = await cliWith(s, ["copy-store", "--from", path]);
        expect.soft(r.code, `${path}: ${r.stderr}`).toBe(code);
        const lines = r.stderr.trimEnd().split("\n");
        expect.soft(lines, path).toHaveLength(1);
        expect.soft(lines[0], path).toContain(says);
        // The advice is about the file --from names: changing database.path would change nothing.
        expect
          .soft(lines[0], path)
          .not.toMatch(/database\.path:|point (this one at another )?database\.path/);
      }
    } finally {
      held.close();
    }
    expect(s.copied.query("SELECT 1 FROM resources")).toEqual([]);
  });
});
