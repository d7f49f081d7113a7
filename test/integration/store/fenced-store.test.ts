/**
 * Fencing at the store, on both dialects (docs/scaling-out.md#fencing): a pass sees the store through
 * `fencedStore`, and once its lease changed hands no write of it commits, whichever repository
 * method or transaction it goes through, while reads go on working.
 */
import { describe, expect, it } from "vitest";
import { LeaseLostError } from "../../../src/errors.js";
import type { StoreOps } from "../../../src/store/store.js";
import { fencedStore } from "../../../src/sync/fence.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { createIntent, T1, T2, uid } from "../../helpers/store-fixtures.js";

/** Methods a pass may call without the lease: they read. */
const READS = new Set([
  "resources.findState",
  "resources.findStates",
  "access.keysWithAccess",
  "access.countPairKeys",
  "access.countRevocable",
  "access.countRevocableEach",
  "access.countRevocableKeys",
  "access.pairsWithAccess",
  "access.countLive",
  "access.countKeysSeenSince",
  "pairs.listForMirror",
  "pairs.countAwaitingBaseline",
  "triggers.findInFlight",
  "triggers.get",
  "triggers.lastFinished",
  "triggers.lastIntentAt",
  "runs.newestCreatedAt",
  "runs.isKnown",
  "runs.ofTrigger",
  "runs.get",
  "runs.sourcesOf",
  "runs.sourcesOfTrigger",
  "mirrors.get",
  "mirrors.retired",
  "mirrors.known",
  "leases.isHeld",
  "syncConfigs.find",
  "syncConfigs.list",
  "leases.holders",
  "syncConfigs.find",
  "syncConfigs.list",
  "schedules.find",
  "schedules.list",
  "schedules.lock",
  "replicas.live",
  "controls.list",
  "history.list",
  "history.errors",
  "problems.list",
  "problems.countByKind",
  "approvals.pending",
  "approvals.allowance",
]);

describe.each(await storeDialects())("a fenced store: $name", (dialect) => {
  const opened = useStore(dialect);

  it("commits a pass's writes while it holds the lease, and none of them once another holder took it", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const a = { id: `a-${uid()}`, name: "node-1:1", scope: null };
    const b = { id: `b-${uid()}`, name: "node-1:1", scope: null };
    const grant = await store.leases.acquire(mirror, a, 60);
    const pass = fencedStore(store, { mirror, holder: a.id, epoch: grant?.epoch ?? 0 });
    await pass.mirrors.ensure(mirror, "cfg");
    const trigger = await createIntent(pass, mirror, { intentAt: T1 });
    await pass.transaction((tx) => tx.triggers.markLeaversSwept(trigger.id, true));

    expect(await store.leases.acquire(mirror, b, 60, a.id)).toMatchObject({ epoch: 2 });
    const finish = pass.triggers.finish(trigger.id, {
      outcome: "succeeded",
      message: "stale",
      summary: {},
      finishedAt: T2,
    });
    await expect(finish).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      pass.transaction((tx) =>
        tx.mirrors.recordOutcome(mirror, { mode: "full", outcome: "x", message: "", at: T2 }),
      ),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(pass.runs.updateStatus("r-none", "running", null)).rejects.toBeInstanceOf(LeaseLostError);
    expect(
      (await pass.triggers.get(trigger.id)).finishedAt,
      "reads still work; nothing was written",
    ).toBeNull();
    // Read by settle beside the trigger: a transaction of its own (and, on PostgreSQL, a connection
    // made ready for writes) would only have cost round trips.
    expect(await pass.history.errors(trigger.id)).toEqual([]);
    expect((await store.mirrors.get(mirror))?.lastOutcome ?? null).toBeNull();
  });

  it("fences every repository method except the reads", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const pass = fencedStore(store, { mirror, holder: `gone-${uid()}`, epoch: 1 });
    const methods = Object.entries(pass as unknown as StoreOps).flatMap(([repo, methods]) =>
      typeof methods === "object" && methods !== null && repo !== "feed" && repo !== "search"
        ? Object.keys(methods).map((m) => `${repo}.${m}`)
        : [],
    );
    const writes = methods.filter((m) => !READS.has(m));
    expect(writes).toContain("triggers.finish");
    expect(writes).toContain("mirrors.recordOutcome");
    for (const name of writes) {
      const [repo, method] = name.split(".") as [Exclude<keyof StoreOps, "changes">, string];
      const call = (pass[repo] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[
        method
      ];
      await expect(call?.(), name).rejects.toBeInstanceOf(LeaseLostError);
    }
  });
});
