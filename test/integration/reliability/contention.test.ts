/**
 * Contention and storage failures: two processes on one database, a read-only database file. Each
 * ends in a clear error or a clean refusal, never in a corrupt or half-written mirror. On SQLite the
 * second process meets the file's writer lock; on PostgreSQL it meets the mirror's lease. The
 * read-only file is SQLite's alone; a disk that fills mid-pass, and its PostgreSQL twin, is
 * mirror/database-fault.test.ts.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { readJournal } from "../../../src/store/migrations-dir.js";
import { httpGet, spawnCli, sumSeries, waitForPort } from "../../helpers/daemon.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
let h: Harness | undefined;

/** A `sync` whose runs are held upstream, once its trigger arrived (it holds the database or the lease by then). */
async function heldSync(h: Harness): Promise<{ exited: ReturnType<Harness["cli"]> }> {
  h.sim.runs.hold();
  const exited = h.cli(["sync"]);
  await vi.waitFor(() => expect(triggerPosts(h)).toBe(1), { timeout: 30_000, interval: 20 });
  return { exited };
}
let cleanup: (() => void) | undefined;
afterEach(async () => {
  cleanup?.();
  cleanup = undefined;
  await twins?.close();
  twins = undefined;
  await h?.close();
  h = undefined;
});

describe.skipIf(onPostgres)("SQLite only (the file's writer lock): two processes on one database", () => {
  it("refuses the second writer with a clear message while the first finishes untouched", async () => {
    twins = await createTwins({ sim: { docs: 40 } });
    const { clean, hurt } = twins;
    await clean.sync();
    const first = await heldSync(hurt);

    const second = await hurt.cli(["sync"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/database .*mirror\.db is in use by another syncmirror process/);
    expect(second.stderr).toMatch(/stop it first, or point this one at another database\.path/);
    // The lock is the whole database's: the command stops before any mirror's pass.
    const json = await hurt.cli(["sync", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      outcome: "not_all_succeeded",
      error: { code: "DB_LOCKED", message: json.stderr.trim().replace(/^syncmirror: /, "") },
      mirrors: [],
    });
    expect(triggerPosts(hurt)).toBe(1);

    hurt.sim.runs.release();
    expect((await first.exited).code).toBe(0);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it("a daemon started beside a running sync waits for the lock, not ready, then takes over", async () => {
    twins = await createTwins({ sim: { docs: 20 } });
    const { hurt } = twins;
    const first = await heldSync(hurt);

    const daemon = spawnCli(["run", "--config", hurt.configPath], { ...hurt.env, LOG_LEVEL: "info" });
    cleanup = () => daemon.child.kill("SIGKILL");
    const port = await waitForPort(daemon);
    await vi.waitFor(
      () => expect(daemon.stderr()).toContain("database locked by another process; waiting (not ready)"),
      {
        timeout: 30_000,
        interval: 20,
      },
    );
    expect((await httpGet(port, "/readyz")).status).toBe(503);
    expect((await httpGet(port, "/healthz")).status).toBe(200);

    hurt.sim.runs.release();
    expect((await first.exited).code).toBe(0);
    await vi.waitFor(async () => expect((await httpGet(port, "/readyz")).status).toBe(200), {
      timeout: 30_000,
      interval: 50,
    });
    daemon.child.kill("SIGTERM");
    expect((await daemon.exited).code).toBe(0);
    cleanup = undefined;
    expect(databaseProblems(hurt)).toEqual([]);
  });
});

describe.runIf(onPostgres)("two processes on one PostgreSQL database (the mirror's lease)", () => {
  it("a second sync while the first runs the mirror does nothing, exits 1 naming why; the first finishes untouched", async () => {
    twins = await createTwins({ sim: { docs: 40 } });
    const { clean, hurt } = twins;
    await clean.sync();
    const first = await heldSync(hurt);

    const second = await hurt.cli(["sync"]);
    expect(second.code).toBe(1);
    expect(second.stdout).toMatch(
      /another syncmirror process .* is running this mirror's pass; nothing was done/,
    );
    const json = await hurt.cli(["sync", "--json"]);
    expect(json.code).toBe(1);
    const [busy] = JSON.parse(json.stdout).mirrors;
    expect(busy).toMatchObject({ outcome: "failed", trigger_id: null });
    // Like any pass that failed as a whole, its reason is its one error.
    expect(busy.errors).toEqual([expect.objectContaining({ sync_id: null, error: busy.message })]);
    expect(triggerPosts(hurt)).toBe(1);

    hurt.sim.runs.release();
    expect((await first.exited).code).toBe(0);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it("a daemon started beside a running sync is ready at once and leaves the mirror to it", async () => {
    twins = await createTwins({ sim: { docs: 20 }, defaults: { incremental_cron: "*/1 * * * * *" } });
    const { hurt } = twins;
    const first = await heldSync(hurt);

    const daemon = spawnCli(["run", "--config", hurt.configPath], { ...hurt.env, LOG_LEVEL: "info" });
    cleanup = () => daemon.child.kill("SIGKILL");
    const port = await waitForPort(daemon);
    await vi.waitFor(async () => expect((await httpGet(port, "/readyz")).status).toBe(200), {
      timeout: 30_000,
      interval: 50,
    });
    // Ticks come every second; none may trigger while the sync holds the mirror.
    await vi.waitFor(
      async () =>
        expect(
          sumSeries((await httpGet(port, "/metrics")).body, "syncmirror_ticks_skipped_total"),
        ).toBeGreaterThan(0),
      { timeout: 30_000, interval: 50 },
    );
    const json = await hurt.cli(["sync", "--json"]);
    expect(json.code).toBe(1);
    const [busy] = JSON.parse(json.stdout).mirrors;
    expect(busy).toMatchObject({ outcome: "failed", trigger_id: null });
    // Like any pass that failed as a whole, its reason is its one error.
    expect(busy.errors).toEqual([expect.objectContaining({ sync_id: null, error: busy.message })]);
    expect(triggerPosts(hurt)).toBe(1);

    hurt.sim.runs.release();
    expect((await first.exited).code).toBe(0);
    daemon.child.kill("SIGTERM");
    expect((await daemon.exited).code).toBe(0);
    cleanup = undefined;
    expect(databaseProblems(hurt)).toEqual([]);
  });
});

/**
 * Root ignores file modes, so as root the file is made immutable instead (chattr +i, which even
 * root cannot write); elsewhere it is chmod 0400.
 */
function makeReadOnly(path: string): () => void {
  if (process.getuid?.() === 0) {
    run("chattr", ["+i", path]);
    return () => run("chattr", ["-i", path]);
  }
  chmodSync(path, 0o400);
  return () => chmodSync(path, 0o600);
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
}

describe.skipIf(onPostgres)("SQLite only (the database file's mode and size): storage failures", () => {
  it("a read-only database file: exit 2 naming the file and what to do, nothing changed, nothing triggered", async () => {
    twins = await createTwins({ sim: { docs: 30 } });
    const { hurt } = twins;
    expect((await hurt.sync()).outcome).toBe("succeeded");
    const before = snapshot(hurt);
    const posts = triggerPosts(hurt);
    cleanup = makeReadOnly(hurt.dbPath);

    const r = await hurt.cli(["sync", "--full"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(hurt.dbPath);
    expect(r.stderr).toMatch(/writable|read-only/);
    expect(triggerPosts(hurt)).toBe(posts);
    cleanup();
    cleanup = undefined;
    expect(snapshotDiff(snapshot(hurt), before)).toEqual([]);
  });
});

describe.skipIf(onPostgres)(
  "SQLite only (PostgreSQL migrates under its advisory lock): commands starting together",
  () => {
    it("migrate a database once: every one of them opens it, none fails on the schema another just created", async () => {
      h = await createHarness();
      const harness = h;
      for (let round = 0; round < 3; round++) {
        // The file as a daemon starting up leaves it for a moment: created, not yet migrated.
        rmSync(`${harness.dbPath}-wal`, { force: true });
        rmSync(`${harness.dbPath}-shm`, { force: true });
        writeFileSync(harness.dbPath, "");
        // `changes` migrates as it opens; status and check leave a file holding no mirror untouched.
        const runs = await Promise.all(
          Array.from({ length: 6 }, () => harness.cli(["changes", "--after", "0"])),
        );
        for (const r of runs) expect(r.stderr, `round ${round}`).toBe("");
        expect(runs.map((r) => r.code)).toEqual(runs.map(() => 0));
        expect(harness.query("SELECT count(*) AS n FROM __drizzle_migrations")).toEqual([
          { n: readJournal("sqlite").entries.length },
        ]);
      }
    });
  },
);
