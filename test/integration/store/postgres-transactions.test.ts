/**
 * PostgreSQL transactions between replicas: a deadlock with another replica is retried from the
 * start, changes take their seqs in commit order, a sweep never tombstones a key another replica's
 * page is granting, and a lost connection fails the transaction as a
 * database error, after which the store reconnects. Within one process, the next transaction
 * begins behind the previous one's COMMIT on its connection: it sees what that one wrote, and a
 * COMMIT that fails there fails alone.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import { openPostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { isDatabaseError, type Store } from "../../../src/store/store.js";
import { applyRevocations } from "../../../src/sync/revoke.js";
import { until } from "../../helpers/daemon.js";
import { createTestDatabase, postgresForTests, TEST_URL_ENV } from "../../helpers/postgres.js";
import { resource, T1, T2 } from "../../helpers/store-fixtures.js";

/** A promise and the function that settles it. */
function signal(): { promise: Promise<void>; fire(): void } {
  let fire = () => {};
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

describe.runIf(await postgresForTests())("PostgreSQL transactions", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: Store;
  let other: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openPostgresStore({
      url: database.url,
      urlEnv: TEST_URL_ENV,
      poolSize: 3,
      log: silentLogger(),
    });
    other = new pg.Client({ connectionString: database.url });
    await other.connect();
  });
  afterAll(async () => {
    await other?.end();
    await store?.close();
    await database?.release();
  });

  /** `use` with a second replica's store on the same database, closed after. */
  async function withReplica(use: (replica: Store) => Promise<void>): Promise<void> {
    const replica = await openPostgresStore({
      url: database.url,
      urlEnv: TEST_URL_ENV,
      poolSize: 2,
      log: silentLogger(),
    });
    try {
      await use(replica);
    } finally {
      await replica.close();
    }
  }

  describe("the next transaction, begun behind a COMMIT still on its way", () => {
    // A deferred trigger runs at COMMIT: it makes one mirror's commit slow, another's fail, and a
    // third's fail once as a conflicting writer would.
    beforeAll(async () => {
      // A sequence, unlike a table, keeps its count when the transaction fails.
      await other.query("CREATE SEQUENCE conflict_once");
      await other.query(`CREATE FUNCTION commit_hook() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.mirror = 'slow-commit' THEN PERFORM pg_sleep(0.5); END IF;
          IF NEW.mirror = 'failing-commit' THEN
            RAISE EXCEPTION 'refused at commit' USING ERRCODE = 'check_violation';
          END IF;
          IF NEW.mirror = 'conflict-once' AND nextval('conflict_once') = 1 THEN
            RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure';
          END IF;
          RETURN NULL;
        END $$`);
      await other.query(`CREATE CONSTRAINT TRIGGER commit_hook AFTER INSERT ON mirror_state
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION commit_hook()`);
    });

    it("sees what the transaction before it wrote, even while that COMMIT is slow", async () => {
      const slow = store.transaction((tx) => tx.mirrors.ensure("slow-commit", "cfg"));
      const next = store.transaction((tx) => tx.mirrors.get("slow-commit"));
      await slow;
      expect(await next).toMatchObject({ syncConfigId: "cfg" });
    });

    it("a COMMIT that fails fails its own transaction only; the one behind it commits", async () => {
      const failing = store.transaction((tx) => tx.mirrors.ensure("failing-commit", "cfg"));
      const behind = store.transaction((tx) => tx.mirrors.ensure("behind-failed", "cfg"));
      const [failed, committed] = await Promise.allSettled([failing, behind]);
      expect(failed.status).toBe("rejected");
      expect(isDatabaseError((failed as PromiseRejectedResult).reason)).toBe(true);
      expect(committed.status).toBe("fulfilled");
      expect(await store.mirrors.get("failing-commit")).toBeUndefined();
      expect(await store.mirrors.get("behind-failed")).toMatchObject({ syncConfigId: "cfg" });
      await store.transaction((tx) => tx.mirrors.ensure("after-failed", "cfg"));
      expect(await store.mirrors.get("after-failed")).toMatchObject({ syncConfigId: "cfg" });
    });

    it("a COMMIT that a conflicting writer fails is run again from the start, after the one behind it", async () => {
      let attempts = 0;
      const conflicting = store.transaction(async (tx) => {
        attempts++;
        await tx.mirrors.ensure("conflict-once", "cfg");
      });
      const behind = store.transaction((tx) => tx.mirrors.ensure("behind-conflict", "cfg"));
      await Promise.all([conflicting, behind]);
      expect(attempts).toBe(2);
      expect(await store.mirrors.get("conflict-once")).toMatchObject({ syncConfigId: "cfg" });
      expect(await store.mirrors.get("behind-conflict")).toMatchObject({ syncConfigId: "cfg" });
    });
  });

  it("retries a transaction that lost a deadlock to another replica, from the start", async () => {
    for (const mirror of ["x", "y"]) await store.mirrors.ensure(mirror, "cfg");
    const storeHoldsX = signal();
    const otherHoldsY = signal();
    const otherCommitted = signal();
    // The other side waits long before checking for a deadlock, so the store is the one aborted.
    await other.query("SET deadlock_timeout = '30s'");
    await other.query("BEGIN");
    let attempts = 0;
    const page = store.transaction(async (tx) => {
      attempts++;
      // A retry that reached x before the other side's waiting UPDATE would deadlock again.
      if (attempts > 1) await otherCommitted.promise;
      await tx.mirrors.recordOutcome("x", {
        mode: "full",
        outcome: "succeeded",
        message: "store",
        at: "2026-01-01T00:00:00.000Z",
      });
      storeHoldsX.fire();
      await otherHoldsY.promise;
      await tx.mirrors.recordOutcome("y", {
        mode: "full",
        outcome: "succeeded",
        message: "store",
        at: "2026-01-01T00:00:00.000Z",
      });
      return attempts;
    });
    await storeHoldsX.promise;
    await other.query("UPDATE mirror_state SET last_message = 'other' WHERE mirror = 'y'");
    otherHoldsY.fire();
    await other.query("UPDATE mirror_state SET last_message = 'other' WHERE mirror = 'x'");
    await other.query("COMMIT");
    otherCommitted.fire();
    expect(await page).toBe(2);
    expect((await store.mirrors.get("x"))?.lastMessage).toBe("store");
    expect((await store.mirrors.get("y"))?.lastMessage).toBe("store");
  });

  it("numbers changes in commit order across replicas, so a consumer reading past a seq misses nothing", async () => {
    await withReplica(async (replica) => {
      const change = (key: string) => ({
        key,
        op: "upsert" as const,
        at: "2026-01-01T00:00:00.000Z",
        mirror: "feed",
        scope: "run-1",
      });
      const firstRecorded = signal();
      const otherCommitted = signal();
      const slow = store.transaction(async (tx) => {
        await tx.changes.recordAll([change("recorded-first-committed-last")]);
        firstRecorded.fire();
        await otherCommitted.promise;
      });
      await firstRecorded.promise;
      await replica.transaction((tx) => tx.changes.recordAll([change("recorded-second-committed-first")]));
      otherCommitted.fire();
      await slow;
      const { rows } = await other.query<{ key: string }>(
        "SELECT key FROM changes WHERE mirror = 'feed' ORDER BY seq",
      );
      expect(rows.map((r) => r.key)).toEqual([
        "recorded-second-committed-first",
        "recorded-first-committed-last",
      ]);
    });
  });

  it("keeps a key live that another replica's page grants while this one's sweep takes its last other access", async () => {
    await withReplica(async (replica) => {
      const key = "shared-by-two-mirrors";
      const a = { mirror: "sweeping", userEmail: "u@example.test", serverInstanceId: "srv" };
      const b = { ...a, mirror: "ingesting" };
      await store.resources.writeAll([resource(key)], null, T1);
      await store.access.seeAll([{ ...a, key, source: "docs", seenAt: T1 }]);
      const pageRead = signal();
      const sweepStarted = signal();
      // Mirror `ingesting`'s page on the other replica: the key is live and unchanged, so only its
      // access is written.
      const page = replica.transaction(async (tx) => {
        await tx.resources.holdOffTombstones();
        const states = await tx.resources.findStates([key]);
        pageRead.fire();
        await sweepStarted.promise;
        await tx.changes.recordSeen([{ ...b, key, source: "docs", seenAt: T2 }], [false], {
          at: T2,
          mirror: b.mirror,
          scope: "run-b",
        });
        return states.get(key)?.deletedAt;
      });
      await pageRead.promise;
      let swept = false;
      const sweep = store
        .transaction(async (tx) =>
          applyRevocations(
            { now: () => new Date(T2) },
            tx,
            a.mirror,
            await tx.access.revokePair(a, 100),
            "sweep-a",
          ),
        )
        .finally(() => {
          swept = true;
        });
      // The sweep is either done or waiting for the page's transaction to end.
      await until(
        async () =>
          swept ||
          (await other.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rowCount,
        "the sweep done or waiting",
      );
      sweepStarted.fire();
      expect(await page).toBeNull();
      expect(await sweep).toEqual({ revoked: 1, deleted: 0 });
      expect(await store.resources.findState(key)).toMatchObject({ deletedAt: null });
      const { rows } = await other.query("SELECT op FROM changes WHERE key = $1 ORDER BY seq", [key]);
      expect(rows).toEqual([{ op: "access" }, { op: "access" }]);
    });
  });

  it("fails a transaction whose connection is lost as a database error, then reconnects", async () => {
    const failed = await store
      .transaction(async (tx) => {
        await tx.mirrors.ensure("lost", "cfg");
        await other.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'syncmirror'",
        );
        await tx.mirrors.recordOutcome("lost", {
          mode: "full",
          outcome: "failed",
          message: "never",
          at: "2026-01-01T00:00:00.000Z",
        });
      })
      .catch((error: unknown) => error);
    expect(isDatabaseError(failed)).toBe(true);
    expect((failed as Error).message).toMatch(
      /^lost the connection to the PostgreSQL database in \$\w+ \(.+\): check that the server is up .*then run again: the mirror resumes where it stopped$/,
    );
    expect((failed as Error).message).not.toContain(database.url);
    expect(await store.mirrors.get("lost")).toBeUndefined();
    await store.transaction((tx) => tx.mirrors.ensure("lost", "cfg"));
    expect(await store.mirrors.get("lost")).toMatchObject({ syncConfigId: "cfg" });
    await store.ping();
  });
});
