/**
 * The store contract, errors and retries, for both dialects: whatever the database refuses, and a
 * row that vanished, reach the caller as DatabaseError after a rollback; the caller's own errors
 * pass untouched; a transaction another writer got in the way of runs again from the start (forced
 * here through the SYNCMIRROR_RETRY_EACH_TRANSACTION seam), committing and waking listeners once.
 */
import { describe, expect, it } from "vitest";
import { AbortedError, DatabaseError } from "../../../src/errors.js";
import { isDatabaseError } from "../../../src/store/store.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { ingestNew, resource, T1, uid } from "../../helpers/store-fixtures.js";

describe.each(await storeDialects())("store contract, errors and retries: $name", (dialect) => {
  const opened = useStore(dialect, { retryEachTransaction: true });

  const changesOf = (key: string) => opened.query("SELECT op FROM changes WHERE key = ?", key);

  it("raises what the database refuses as DatabaseError, rolls the transaction back and carries on", async () => {
    const [kept, refused] = [`k-${uid()}`, `k-${uid()}`];
    let attempts = 0;
    const failed = await opened.store
      .transaction(async (tx) => {
        attempts++;
        await ingestNew(tx, `m-${uid()}`, resource(kept));
        await tx.resources.writeAll(
          [{ ...resource(refused), contentHash: null as unknown as string }],
          null,
          T1,
        );
      })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(DatabaseError);
    expect(isDatabaseError(failed)).toBe(true);
    expect((failed as DatabaseError).cause).toBeDefined();
    // Not a conflict with another writer: never run again.
    expect(attempts).toBe(1);
    expect(await opened.store.resources.findState(kept)).toBeUndefined();
    expect(await changesOf(kept)).toEqual([]);

    const outside = await opened.store.resources
      .writeAll([{ ...resource(refused), contentHash: null as unknown as string }], null, T1)
      .catch((error: unknown) => error);
    expect(outside).toBeInstanceOf(DatabaseError);
    await opened.store.transaction((tx) => ingestNew(tx, `m-${uid()}`, resource(kept)));
    expect(await opened.store.resources.findState(kept)).toMatchObject({ contentHash: "h1" });
  });

  it("raises a row that vanished as DatabaseError saying so", async () => {
    for (const read of [
      () => opened.store.triggers.get(987_654_321),
      () => opened.store.runs.get(`r-${uid()}`),
    ]) {
      const error = await read().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DatabaseError);
      expect((error as Error).message).toMatch(/vanished from the database/);
    }
  });

  it("lets the caller's own errors through untouched", async () => {
    const own = new AbortedError("the lease was lost");
    const plain = new Error("page failed");
    for (const thrown of [own, plain]) {
      const error = await opened.store
        .transaction(async (tx) => {
          await tx.mirrors.ensure(`m-${uid()}`, "cfg");
          throw thrown;
        })
        .catch((e: unknown) => e);
      expect(error).toBe(thrown);
    }
  });

  it("runs a transaction another writer got in the way of again from the start: work and wake-ups once", async () => {
    const mirror = `m-${uid()}`;
    const key = `k-${uid()}`;
    let commits = 0;
    const off = opened.store.onCommit(() => commits++);
    const commitsSeenByAttempt: number[] = [];
    const attempts = await opened.store.transaction(async (tx) => {
      commitsSeenByAttempt.push(commits);
      await ingestNew(tx, mirror, resource(key));
      await tx.mirrors.ensure(mirror, "cfg");
      return commitsSeenByAttempt.length;
    });
    off();
    expect(attempts).toBe(2);
    // The rolled-back attempt woke nobody; the commit did (on PostgreSQL its NOTIFY may wake twice).
    expect(commitsSeenByAttempt).toEqual([0, 0]);
    expect(commits).toBeGreaterThanOrEqual(1);
    expect(await changesOf(key)).toEqual([{ op: "upsert" }]);
    expect(
      await opened.store.access.countPairKeys({
        mirror,
        userEmail: "ann@example.test",
        serverInstanceId: "srv-1",
      }),
    ).toBe(1);
    expect(await opened.store.mirrors.get(mirror)).toMatchObject({ syncConfigId: "cfg" });
  });
});
