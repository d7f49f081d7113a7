/**
 * Revocations after access rows were removed (`sync/revoke.ts`): statements that need no other's
 * answer are issued together, so on PostgreSQL, which pipelines them, a batch costs three round
 * trips instead of five, each pair a sweep revokes from paying them in turn.
 */
import { expect, it } from "vitest";
import type { StoreOps } from "../../../src/store/store.js";
import { applyRevocations } from "../../../src/sync/revoke.js";

it("takes the lock with the batch's read and writes the tombstones with the changes", async () => {
  const issued: string[] = [];
  let waiting = 0;
  let roundTrips = 0;
  // A call made while none is waiting for its answer starts a round trip; one made beside others
  // still waiting shares theirs.
  const call = <T>(name: string, answer: T): Promise<T> => {
    issued.push(name);
    if (waiting === 0) roundTrips++;
    waiting++;
    return new Promise((resolve) =>
      setImmediate(() => {
        waiting--;
        resolve(answer);
      }),
    );
  };
  const tx = {
    resources: {
      lockTombstones: () => call("lock", undefined),
      findStates: (keys: string[]) => call("findStates", new Map(keys.map((k) => [k, { deletedAt: null }]))),
      tombstoneAll: () => call("tombstoneAll", undefined),
    },
    access: { keysWithAccess: (keys: string[]) => call("keysWithAccess", new Set(keys.slice(0, 1))) },
    changes: { recordAll: () => call("recordAll", undefined) },
  } as unknown as StoreOps;
  const at = { now: () => new Date("2026-11-29T10:00:00.000Z") };
  expect(await applyRevocations(at, tx, "m", ["a", "b", "c", "b"], "sweep:1")).toEqual({
    revoked: 4,
    deleted: 2,
  });
  expect(issued).toEqual(["lock", "findStates", "keysWithAccess", "tombstoneAll", "recordAll"]);
  expect(roundTrips).toBe(3);
});
