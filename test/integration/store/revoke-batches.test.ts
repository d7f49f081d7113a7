/**
 * Memory stays bounded by a batch, not by what a pair holds: revoking a pair's access (a user who
 * left, `forget`) and a sweep's misses take the keys from the store a batch at a time, for both
 * dialects. The store is asked for at most a batch and answers at most that; called until it
 * answers fewer, every key goes, and the misses of the keys left are counted once.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createLeaseHolder } from "../../../src/lease-holder.js";
import { silentLogger } from "../../../src/log.js";
import { createMetrics } from "../../../src/metrics.js";
import type { Store, StoreOps } from "../../../src/store/store.js";
import type { PairRef } from "../../../src/store/types.js";
import { forgetMirror } from "../../../src/sync/forget.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { resource, T1, T2, uid } from "../../helpers/store-fixtures.js";

/** More keys than a batch of revocations (500) takes. */
const KEYS = 1_234;

describe.each(await storeDialects())("revocations in batches: $name", (dialect) => {
  const opened = useStore(dialect);

  /** A pair holding `n` keys, seen at T1, each with its live resource. */
  async function pairHolding(n: number): Promise<{ pair: PairRef; keys: string[] }> {
    const mirror = `m-${uid()}`;
    const pair: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const prefix = `k-${uid()}`;
    const keys = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    await opened.store.transaction(async (tx) => {
      await tx.resources.writeAll(
        keys.map((key) => resource(key)),
        "engine-1",
        T1,
      );
      await tx.access.seeAll(keys.map((key) => ({ ...pair, key, source: "docs", seenAt: T1 })));
    });
    return { pair, keys };
  }

  it("revokes at most `limit` of a pair's keys a call, all of them once called until fewer come", async () => {
    const { pair, keys } = await pairHolding(5);
    const got = await opened.store.transaction(async (tx) => [
      await tx.access.revokePair(pair, 2),
      await tx.access.revokePair(pair, 2),
      await tx.access.revokePair(pair, 2),
    ]);
    expect(got.map((batch) => batch.length)).toEqual([2, 2, 1]);
    expect(got.flat().sort()).toEqual([...keys].sort());
    expect(await opened.store.access.countPairKeys(pair)).toBe(0);
  });

  it("sweeps at most `limit` missed keys a call, counting the miss of the keys left once", async () => {
    const { pair, keys } = await pairHolding(5);
    const [seen, ...missed] = keys as [string, ...string[]];
    await opened.store.access.seeAll([{ ...pair, key: seen, source: "docs", seenAt: T2 }]);
    // Threshold 2: the first snapshot that misses them counts one miss each, revoking none.
    const first = await opened.store.transaction((tx) => tx.access.sweepMissed(pair, T2, 2, 2));
    expect(first).toEqual([]);
    expect(await opened.store.access.countRevocable(pair, T2, 2)).toBe(missed.length);
    // The second reaches the threshold: a batch of at most 2 a call.
    const second = await opened.store.transaction(async (tx) => [
      await tx.access.sweepMissed(pair, T2, 2, 2),
      await tx.access.sweepMissed(pair, T2, 2, 2),
      await tx.access.sweepMissed(pair, T2, 2, 2),
    ]);
    expect(second.map((batch) => batch.length)).toEqual([2, 2, 0]);
    expect(second.flat().sort()).toEqual([...missed].sort());
    expect(await opened.store.access.countPairKeys(pair)).toBe(1);
  });

  it("forget asks the store for a batch at a time, each in a transaction of its own", async () => {
    const { pair, keys } = await pairHolding(KEYS);
    const answered: number[] = [];
    const asked: number[] = [];
    let transactions = 0;
    const store = spyOnRevokePair(
      opened.store,
      (limit, got) => {
        asked.push(limit);
        answered.push(got.length);
      },
      () => transactions++,
    );
    const forgotten = await forgetMirror(pair.mirror, {
      store,
      configured: [],
      holder: createLeaseHolder(),
      leaseSeconds: 60,
      signal: new AbortController().signal,
      log: silentLogger(),
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      now: () => new Date(T2),
      crashPoint: () => {},
    });
    expect(forgotten).toMatchObject({ access_revoked: KEYS, resources_deleted: KEYS, keys: KEYS });
    expect(Math.max(...answered)).toBeLessThan(KEYS);
    expect(Math.max(...answered)).toBeLessThanOrEqual(Math.max(...asked));
    expect(answered.reduce((a, b) => a + b, 0)).toBe(keys.length);
    // Each batch, then the mirror's state: no transaction holds more than a batch of revocations.
    expect(transactions).toBe(answered.length + 1);
    const states = await opened.store.resources.findStates(keys);
    expect([...states.values()].filter((s) => s.deletedAt !== null)).toHaveLength(KEYS);
  });
});

/** The store, with each transaction's `access.revokePair` reporting what it was asked and answered, and each transaction begun. */
function spyOnRevokePair(
  store: Store,
  seen: (limit: number, keys: readonly string[]) => void,
  began: () => void,
): Store {
  const spyTx = (tx: StoreOps): StoreOps =>
    new Proxy(tx, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== "access") return value;
        return new Proxy(value as StoreOps["access"], {
          get(access, name, r) {
            const method = Reflect.get(access, name, r);
            if (name !== "revokePair") return typeof method === "function" ? method.bind(access) : method;
            return async (pair: PairRef, limit: number) => {
              const keys = await access.revokePair(pair, limit);
              seen(limit, keys);
              return keys;
            };
          },
        });
      },
    });
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== "transaction") return typeof value === "function" ? value.bind(target) : value;
      return <T>(fn: (tx: StoreOps) => Promise<T>) => {
        began();
        return target.transaction((tx) => fn(spyTx(tx)));
      };
    },
  });
}
