/**
 * The fence check on PostgreSQL orders a takeover after the old holder's open write transaction
 * (docs/scaling-out.md#fencing): checking the lease inside a transaction share-locks its row, so a replica taking
 * the lease over waits for that transaction to end, and a holder frozen inside one (paused,
 * partitioned) loses its session after one lease of idling rather than blocking the takeover forever.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatabaseError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import { openPostgresStore } from "../../../src/store/postgres/postgres-store.js";
import type { Store, StoreOps } from "../../../src/store/store.js";
import { until } from "../../helpers/daemon.js";
import { createTestDatabase, postgresForTests, TEST_URL_ENV } from "../../helpers/postgres.js";
import { uid } from "../../helpers/store-fixtures.js";

const available = await postgresForTests();

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire = () => {};
  const promise = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { promise, fire };
}

describe.skipIf(!available)("the lease fence on PostgreSQL", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: Store;
  let reader: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openPostgresStore({
      url: database.url,
      urlEnv: TEST_URL_ENV,
      poolSize: 4,
      log: silentLogger(),
    });
    reader = new pg.Client({ connectionString: database.url });
    await reader.connect();
  });
  afterAll(async () => {
    await reader?.end();
    await store?.close();
    await database?.drop();
  });

  const waitingOnLock = async () =>
    (
      await reader.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      )
    ).rowCount === 1;

  /**
   * A mirror whose lease holder `a` (`ttlSeconds`) is inside a write transaction, past its fence
   * check and paused there until `resume()`; `then` writes in it after. `held` is the fence check's answer.
   */
  async function holderMidWrite(
    ttlSeconds: number,
    then?: (tx: StoreOps, mirror: string) => Promise<unknown>,
  ) {
    const mirror = `m-${uid()}`;
    const a = { id: `a-${uid()}`, name: "node-1:1", scope: null };
    const b = { id: `b-${uid()}`, name: "node-2:1", scope: null };
    const a1 = { mirror, holder: a.id, epoch: 1 };
    await store.leases.acquire(mirror, a, ttlSeconds);
    const gate = signal();
    const entered = signal();
    let held = false;
    const write = store.transaction(async (tx) => {
      held = await tx.leases.isHeld(a1);
      entered.fire();
      await gate.promise;
      await then?.(tx, mirror);
    });
    await entered.promise;
    return { mirror, a, b, a1, held, write, resume: gate.fire };
  }

  it("lets a takeover wait for the old holder's write, which commits first", async () => {
    const { mirror, a, b, a1, held, write, resume } = await holderMidWrite(60, (tx, m) =>
      tx.mirrors.ensure(m, "cfg"),
    );
    expect(held).toBe(true);
    const events: string[] = [];
    // Replacing a holder known dead: the same statement as taking an expired lease, without the wait.
    const takeover = store.leases.acquire(mirror, b, 60, a.id).then((grant) => {
      events.push("taken over");
      return grant;
    });
    await until(waitingOnLock, "the takeover to wait on the lease row");
    resume();
    await write;
    events.push("committed");
    expect(await takeover).toMatchObject({ epoch: 2, tookOver: { holder: a.id, epoch: 1 } });
    expect(events).toEqual(["committed", "taken over"]);
    expect(await store.mirrors.get(mirror)).toMatchObject({ syncConfigId: "cfg" });
    expect(await store.leases.isHeld(a1)).toBe(false);
  });

  it("gives a takeover that waited on the old holder's write a whole lease from when it got the row: one change of hands, one epoch", async () => {
    const { mirror, a, b, write, resume } = await holderMidWrite(60);
    const takeover = store.leases.acquire(mirror, b, 1, a.id);
    await until(waitingOnLock, "the takeover to wait on the lease row");
    // The takeover waits longer than the 1 s lease it asks for.
    await reader.query("SELECT pg_sleep(1.5)");
    resume();
    await write;
    const grant = await takeover;
    expect(grant).toMatchObject({ epoch: 2, tookOver: { holder: a.id, epoch: 1 } });
    expect(await store.leases.isHeld({ mirror, holder: b.id, epoch: 2 })).toBe(true);
  });

  it("ends the session of a holder frozen inside a write transaction, so the takeover proceeds and the write never commits", async () => {
    const { mirror, a, b, write, resume } = await holderMidWrite(1, (tx, m) => tx.mirrors.ensure(m, "stale"));
    const grant = await store.leases.acquire(mirror, b, 60).then(async (first) => {
      return first ?? until(() => store.leases.acquire(mirror, b, 60), "the takeover", 15_000);
    });
    expect(grant).toMatchObject({ epoch: 2, tookOver: { holder: a.id } });
    resume();
    await expect(write).rejects.toBeInstanceOf(DatabaseError);
    expect(await store.mirrors.get(mirror)).toBeUndefined();
  });
});
