/**
 * The store contract, state side, for both dialects: triggers, runs, pairs, mirrors, dry runs and
 * leases, through the `Store` interface the way a pass uses them.
 */
import { describe, expect, it } from "vitest";
import type { PairRef } from "../../../src/store/types.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { createIntent, resource, T1, T2, T3, uid } from "../../helpers/store-fixtures.js";

describe.each(await storeDialects())("store contract, state: $name", (dialect) => {
  const opened = useStore(dialect);
  const intent = (mirror: string, t: Parameters<typeof createIntent>[2]) =>
    createIntent(opened.store, mirror, t);
  /** A dry run's totals, its marks released after, as a one-mirror `sync --full --dry-run` does. */
  const dryRunTotals = async (triggerRowId: number, limit: number) => {
    const totals = await opened.store.dryRun.totals(triggerRowId, limit, []);
    await opened.store.dryRun.release([triggerRowId]);
    return totals;
  };

  it("carries a trigger from intent to done with its JSON parts and counters", async () => {
    const mirror = `m-${uid()}`;
    const created = await intent(mirror, { knownBefore: T1, intentAt: T2 });
    expect(created).toMatchObject({
      mirror,
      state: "intent",
      knownBefore: T1,
      intentAt: T2,
      triggerId: null,
    });
    expect((await opened.store.triggers.findInFlight(mirror))?.id).toBe(created.id);
    const skipped = [
      { user_email: "bo@example.test", server_instance_id: "srv-2", reason: "auth", auth_status: "expired" },
    ];
    const active = await opened.store.triggers.activate(created.id, {
      triggerId: `t-${uid()}`,
      skipped,
      skippedCount: 1,
      adopted: false,
      startedAt: T3,
    });
    expect(active).toMatchObject({
      state: "active",
      skipped,
      skippedCount: 1,
      startedAt: T3,
      adopted: false,
    });
    await opened.store.triggers.setMassDeleteAllowed(created.id, true);
    await opened.store.triggers.addSweepCounts(created.id, { deleted: 2, revoked: 3 });
    await opened.store.triggers.addSweepCounts(created.id, { revoked: 1, sweepsHeld: 1 });
    await opened.store.triggers.setHeldKeys(created.id, 5);
    // Set, not added: a resumed sweep counts the held keys again.
    await opened.store.triggers.setHeldKeys(created.id, 4);
    await opened.store.triggers.markLeaversSwept(created.id, true);
    await opened.store.triggers.finish(created.id, {
      outcome: "succeeded",
      message: "ok",
      summary: { n: 1 },
      finishedAt: T3,
    });
    expect(await opened.store.triggers.findInFlight(mirror)).toBeUndefined();
    expect(await opened.store.triggers.lastFinished(mirror)).toMatchObject({
      id: created.id,
      state: "done",
      allowMassDelete: true,
      deleted: 2,
      revoked: 4,
      held: 4,
      sweepsHeld: 1,
      leaversSwept: true,
      leaversUnknown: true,
      outcome: "succeeded",
      finishedAt: T3,
    });
    const adopted = await intent(mirror, { mode: "incremental", since: T1, intentAt: T3 });
    const adoptedActive = await opened.store.triggers.activate(adopted.id, {
      triggerId: `t-${uid()}`,
      skipped: null,
      skippedCount: 0,
      adopted: true,
      startedAt: T3,
    });
    expect(adoptedActive).toMatchObject({ skipped: null, adopted: true, since: T1 });
    await expect(opened.store.triggers.get(-1)).rejects.toThrow(/vanished/);
  });

  it("keeps runs, their checkpoints, pending continues and sources", async () => {
    const mirror = `m-${uid()}`;
    const trigger = await intent(mirror, { intentAt: T1 });
    const [r1, r2] = [`s-${uid()}`, `s-${uid()}`].sort() as [string, string];
    expect(await opened.store.runs.newestCreatedAt(mirror)).toBeNull();
    await opened.store.runs.insertMany(trigger.id, mirror, [
      { syncId: r1, userEmail: "ann@example.test", status: "RUNNING", createdAt: T1 },
      { syncId: r2, userEmail: "bo@example.test", status: "RUNNING", createdAt: null },
    ]);
    await opened.store.runs.insertMany(trigger.id, mirror, [
      { syncId: r1, userEmail: "ann@example.test", status: "IGNORED", createdAt: T3 },
    ]);
    expect(await opened.store.runs.isKnown(r1)).toBe(true);
    expect(await opened.store.runs.isKnown(`s-${uid()}`)).toBe(false);
    await opened.store.runs.updateStatus(r2, "SUCCEEDED", T2);
    await opened.store.runs.updateStatus(r1, "SUCCEEDED", null);
    expect(await opened.store.runs.newestCreatedAt(mirror)).toBe(T2);
    expect(
      (await opened.store.runs.ofTrigger(trigger.id)).map((r) => [r.syncId, r.status, r.createdAt, r.ingest]),
    ).toEqual([
      [r1, "SUCCEEDED", T1, "waiting"],
      [r2, "SUCCEEDED", T2, "waiting"],
    ]);

    await opened.store.runs.countContinue(r1, { docs: T2, mail: null });
    expect(await opened.store.runs.get(r1)).toMatchObject({
      continuesSent: 1,
      continuePending: { docs: T2, mail: null },
    });
    await opened.store.runs.clearContinuePending(r1);
    expect(await opened.store.runs.get(r1)).toMatchObject({ continuesSent: 1, continuePending: null });

    await opened.store.transaction(async (tx) => {
      await tx.runs.saveFirstPage(r1, {
        schemaVersion: "1.2",
        engineVersion: "e-9",
        diagnostics: { excluded: [] },
        sources: [
          {
            source: "docs",
            sourceType: "docs",
            serverInstanceId: "srv-1",
            taskStatus: "SUCCESS",
            exportStatus: "complete",
            counts: { n: 2 },
          },
          {
            source: "mail",
            sourceType: "mail",
            serverInstanceId: "srv-2",
            taskStatus: "FAILED",
            exportStatus: null,
            counts: null,
          },
        ],
      });
      await tx.runs.checkpoint(r1, 500, {
        upserted: 3,
        unchanged: 1,
        rejected: 0,
        keysNew: 2,
        keysChanged: 1,
      });
    });
    await opened.store.runs.checkpoint(r1, null, {
      upserted: 1,
      unchanged: 0,
      rejected: 2,
      keysNew: 1,
      keysChanged: 0,
    });
    expect(await opened.store.runs.get(r1)).toMatchObject({
      schemaVersion: "1.2",
      engineVersion: "e-9",
      nextOffset: null,
      ingest: "done",
      upserted: 4,
      unchanged: 1,
      rejected: 2,
      keysNew: 3,
      keysChanged: 1,
    });
    await opened.store.runs.setIngest(r2, "failed", "export gone");
    expect(await opened.store.runs.get(r2)).toMatchObject({
      ingest: "failed",
      error: "export gone",
      nextOffset: 0,
    });
    await opened.store.runs.markSwept(r1, "docs", "held");
    expect(await opened.store.runs.sourcesOf(r1)).toEqual([
      {
        syncId: r1,
        source: "docs",
        sourceType: "docs",
        serverInstanceId: "srv-1",
        taskStatus: "SUCCESS",
        exportStatus: "complete",
        swept: "held",
      },
      {
        syncId: r1,
        source: "mail",
        sourceType: "mail",
        serverInstanceId: "srv-2",
        taskStatus: "FAILED",
        exportStatus: null,
        swept: null,
      },
    ]);
    const ofTrigger = await opened.store.runs.sourcesOfTrigger(trigger.id);
    expect([...ofTrigger.keys()]).toEqual([r1]);
    expect(ofTrigger.get(r1)).toEqual(await opened.store.runs.sourcesOf(r1));
    expect(await opened.store.runs.sourcesOfTrigger(-1)).toEqual(new Map());
    await expect(opened.store.runs.get(`s-${uid()}`)).rejects.toThrow(/vanished/);
  });

  it("moves pair watermarks forward only and tracks baselines, skips and retirement", async () => {
    const mirror = `m-${uid()}`;
    const pair: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const other: PairRef = { ...pair, userEmail: "bo@example.test" };
    await opened.store.pairs.ran(pair, T1);
    await opened.store.pairs.succeeded(pair, T2, false);
    await opened.store.pairs.succeeded(pair, T1, false);
    await opened.store.pairs.skipped(other, { reason: "auth", authStatus: "expired", seenAt: T1 });
    expect(await opened.store.pairs.countAwaitingBaseline(mirror)).toBe(2);
    await opened.store.pairs.succeeded(pair, T3, true);
    await opened.store.pairs.retire(other, "user left", T3);
    expect(await opened.store.pairs.countAwaitingBaseline(mirror)).toBe(0);
    const list = await opened.store.pairs.listForMirror(mirror);
    expect(list.find((p) => p.userEmail === pair.userEmail)).toMatchObject({
      watermark: T3,
      firstSeenAt: T1,
      awaitingBaseline: false,
      skipReason: null,
    });
    expect(list.find((p) => p.userEmail === other.userEmail)).toMatchObject({
      watermark: null,
      skipReason: "auth",
      authStatus: "expired",
      retiredAt: T3,
      retiredReason: "user left",
    });
    await opened.store.pairs.ran(other, T3);
    await opened.store.pairs.markAwaitingBaseline(pair);
    expect(await opened.store.pairs.countAwaitingBaseline(mirror)).toBe(2);
  });

  it("keeps each mirror's last outcome and successes by mode", async () => {
    const mirror = `m-${uid()}`;
    expect(await opened.store.mirrors.get(mirror)).toBeUndefined();
    await opened.store.mirrors.ensure(mirror, "cfg-1");
    await opened.store.mirrors.ensure(mirror, "cfg-2");
    await opened.store.mirrors.recordOutcome(mirror, {
      mode: "full",
      outcome: "succeeded",
      message: "ok",
      at: T1,
    });
    await opened.store.mirrors.recordOutcome(mirror, {
      mode: "incremental",
      outcome: "failed",
      message: "no",
      at: T2,
      heldRevocations: 7,
    });
    expect(await opened.store.mirrors.get(mirror)).toEqual({
      mirror,
      syncConfigId: "cfg-2",
      lastIncrementalSuccessAt: null,
      lastFullSuccessAt: T1,
      lastOutcome: "failed",
      lastOutcomeAt: T2,
      lastMessage: "no",
      heldRevocations: 7,
      // Another config named: a full owed since before any trigger, kept until a full succeeds.
      fullPendingAfter: 0,
    });
    expect(await opened.store.mirrors.ensure(mirror, "cfg-2")).toMatchObject({ fullPendingAfter: 0 });
    await opened.store.mirrors.fullSucceeded(mirror, 1);
    expect(await opened.store.mirrors.get(mirror)).toMatchObject({ fullPendingAfter: null });
  });

  it("lists the mirrors not configured with what they grant, and forgets one's state but not its history", async () => {
    const { store } = opened;
    const id = uid();
    const [kept, retired, stateOnly] = [`${id}-a`, `${id}-r`, `${id}-s`];
    const seen = (mirror: string, userEmail: string, key: string) => ({
      mirror,
      userEmail,
      key,
      serverInstanceId: "srv-1",
      source: "docs",
      seenAt: T1,
    });
    await store.transaction(async (tx) => {
      for (const mirror of [kept, retired, stateOnly]) await tx.mirrors.ensure(mirror, "cfg-1");
      await tx.access.seeAll([
        seen(kept, "ann@example.test", `${id}-k1`),
        seen(retired, "ann@example.test", `${id}-k1`),
        seen(retired, "ann@example.test", `${id}-k2`),
        seen(retired, "bo@example.test", `${id}-k2`),
        seen(retired, "bo@example.test", `${id}-k3`),
      ]);
    });
    const ours = async (configured: string[]) =>
      (await store.mirrors.retired(configured)).filter((r) => r.mirror.startsWith(id));
    expect(await ours([kept])).toEqual([
      { mirror: retired, users: 2, keys: 3 },
      { mirror: stateOnly, users: 0, keys: 0 },
    ]);
    expect(await ours([kept, retired, stateOnly])).toEqual([]);

    const bo = { mirror: retired, userEmail: "bo@example.test", serverInstanceId: "srv-1" };
    await store.pairs.succeeded(bo, T1, true);
    const done = await intent(retired, { intentAt: T1 });
    await store.triggers.finish(done.id, {
      outcome: "succeeded",
      message: "ok",
      summary: {},
      finishedAt: T2,
    });
    const inFlight = await intent(retired, { intentAt: T2 });
    await store.runs.insertMany(inFlight.id, retired, [
      { syncId: `${id}-run`, userEmail: bo.userEmail, status: "RUNNING", createdAt: T2 },
    ]);
    await store.transaction((tx) =>
      tx.schedules.save({
        mirror: retired,
        incrementalSlot: T1,
        fullSlot: T1,
        due: null,
        paused: { at: T2, by: "ana" },
      }),
    );
    await store.controls.record({ mirror: retired, action: "pause", mode: null, actor: "ana", at: T2 });
    await store.problems.record([
      {
        mirror: retired,
        kind: "failed_source",
        subject: "s-1",
        userEmail: bo.userEmail,
        serverInstanceId: "srv-1",
        source: "docs",
        syncId: `${id}-run`,
        key: null,
        reason: "FAILED",
        count: null,
        at: T2,
      },
    ]);

    await store.transaction((tx) => tx.mirrors.forget(retired));
    expect(await store.mirrors.get(retired)).toBeUndefined();
    expect(await store.pairs.listForMirror(retired)).toEqual([]);
    expect(await store.triggers.findInFlight(retired)).toBeUndefined();
    expect(await store.runs.isKnown(`${id}-run`)).toBe(false);
    expect(await store.schedules.find(retired)).toBeUndefined();
    expect(await store.problems.list({ mirror: retired, limit: 10 })).toEqual([]);
    expect((await store.triggers.lastFinished(retired))?.id, "its history stays").toBe(done.id);
    expect(await store.controls.list({ mirror: retired, limit: 10 })).toHaveLength(1);
    expect(await store.mirrors.get(kept), "another mirror is untouched").toBeDefined();
    expect(await ours([kept]), "its access rows are the caller's to revoke first").toEqual([
      { mirror: retired, users: 2, keys: 3 },
      { mirror: stateOnly, users: 0, keys: 0 },
    ]);
  });

  it("totals what a dry-run sweep would revoke and delete, then forgets it", async () => {
    const mirror = `m-${uid()}`;
    const ann: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const bo: PairRef = { ...ann, userEmail: "bo@example.test" };
    const [shared, annOnly, seen] = [`s-${uid()}`, `a-${uid()}`, `v-${uid()}`];
    for (const key of [shared, annOnly, seen])
      await opened.store.resources.writeAll([resource(key)], null, T1);
    for (const key of [shared, annOnly, seen])
      await opened.store.access.seeAll([{ ...ann, key, source: "docs", seenAt: T1 }]);
    await opened.store.access.seeAll([{ ...bo, key: shared, source: "docs", seenAt: T1 }]);
    const trigger = await intent(mirror, { intentAt: T2 });
    const totals = () => dryRunTotals(trigger.id, 1000);
    const counts = async () => {
      const t = await totals();
      return { would_revoke: t.would_revoke, would_delete: t.would_delete };
    };
    await opened.store.dryRun.seen(trigger.id, ann.userEmail, [seen]);
    expect(await opened.store.dryRun.collectPair(trigger.id, { ...ann, threshold: 1 }), "marked").toBe(2);
    // Ann loses shared and annOnly; only annOnly would be deleted (Bo still sees shared).
    expect(await counts()).toEqual({ would_revoke: 2, would_delete: 1 });
    expect(await counts()).toEqual({ would_revoke: 0, would_delete: 0 });
    await opened.store.dryRun.collectWholePair(trigger.id, ann);
    await opened.store.dryRun.collectWholePair(trigger.id, bo);
    expect(await counts()).toEqual({ would_revoke: 4, would_delete: 3 });
    // Threshold 2: one miss so far is not enough.
    expect(await opened.store.dryRun.collectPair(trigger.id, { ...ann, threshold: 2 })).toBe(0);
    expect(await counts()).toEqual({ would_revoke: 0, would_delete: 0 });
  });

  it("counts an earlier dry run's marks as revoked when deciding what a later one would delete", async () => {
    const [first, second] = [`m-${uid()}`, `m-${uid()}`];
    const ann: PairRef = { mirror: first, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const annInSecond: PairRef = { ...ann, mirror: second };
    const [shared, kept] = [`s-${uid()}`, `k-${uid()}`];
    for (const key of [shared, kept]) await opened.store.resources.writeAll([resource(key)], null, T1);
    await opened.store.access.seeAll([
      { ...ann, key: shared, source: "docs", seenAt: T1 },
      { ...annInSecond, key: shared, source: "docs", seenAt: T1 },
      { ...annInSecond, key: kept, source: "docs", seenAt: T1 },
    ]);
    const [t1, t2] = [await intent(first, { intentAt: T2 }), await intent(second, { intentAt: T2 })];
    await opened.store.dryRun.collectPair(t1.id, { ...ann, threshold: 1 });
    expect((await opened.store.dryRun.totals(t1.id, 1000, [])).delete).toEqual([]);
    await opened.store.dryRun.seen(t2.id, ann.userEmail, [kept]);
    await opened.store.dryRun.collectPair(t2.id, { ...annInSecond, threshold: 1 });
    expect((await opened.store.dryRun.totals(t2.id, 1000, [])).delete, "alone").toEqual([]);
    expect((await opened.store.dryRun.totals(t2.id, 1000, [t1.id])).delete, "after the first").toEqual([
      shared,
    ]);
    await opened.store.dryRun.release([t1.id, t2.id]);
    expect((await opened.store.dryRun.totals(t2.id, 1000, [t1.id])).would_revoke, "released").toBe(0);
  });

  it("leaves a held pair's marks out of what a dry-run sweep would revoke and delete", async () => {
    const mirror = `m-${uid()}`;
    const ann: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const annElsewhere: PairRef = { ...ann, serverInstanceId: "srv-2" };
    const bo: PairRef = { ...ann, userEmail: "bo@example.test" };
    const [shared, annOnly, other] = [`s-${uid()}`, `a-${uid()}`, `o-${uid()}`];
    for (const key of [shared, annOnly, other])
      await opened.store.resources.writeAll([resource(key)], null, T1);
    await opened.store.access.seeAll([
      { ...ann, key: shared, source: "docs", seenAt: T1 },
      { ...ann, key: annOnly, source: "docs", seenAt: T1 },
      { ...annElsewhere, key: other, source: "docs", seenAt: T1 },
      { ...bo, key: shared, source: "docs", seenAt: T1 },
    ]);
    const trigger = await intent(mirror, { intentAt: T2 });
    for (const p of [ann, annElsewhere, bo])
      await opened.store.dryRun.collectPair(trigger.id, { ...p, threshold: 1 });
    // Ann's sweep on srv-1 held: her srv-2 key and Bo's go; shared stays (Ann still sees it).
    await opened.store.dryRun.forgetPair(trigger.id, ann);
    const t = await dryRunTotals(trigger.id, 1000);
    expect({ would_revoke: t.would_revoke, would_delete: t.would_delete, delete: t.delete }).toEqual({
      would_revoke: 2,
      would_delete: 1,
      delete: [other],
    });
  });

  it("lists what a dry-run sweep would revoke and delete, sorted, up to the limit", async () => {
    const mirror = `m-${uid()}`;
    const ann: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const bo: PairRef = { ...ann, userEmail: "bo@example.test" };
    const id = uid();
    // Written out of order; byte order puts "B" before "a" on both dialects.
    const [k1, k2, k3] = [`k-${id}-b`, `k-${id}-B`, `k-${id}-a`];
    for (const key of [k1, k2, k3]) await opened.store.resources.writeAll([resource(key)], null, T1);
    for (const pair of [bo, ann])
      for (const key of [k1, k2, k3])
        await opened.store.access.seeAll([{ ...pair, key, source: "docs", seenAt: T1 }]);
    const trigger = await intent(mirror, { intentAt: T2 });
    const collect = async () => {
      await opened.store.dryRun.collectWholePair(trigger.id, bo);
      await opened.store.dryRun.seen(trigger.id, ann.userEmail, [k1]);
      await opened.store.dryRun.collectPair(trigger.id, { ...ann, threshold: 1 });
    };
    await collect();
    // Ann keeps k1: only k2 and k3 lose their last access.
    const all = await dryRunTotals(trigger.id, 1000);
    expect(all).toEqual({
      would_revoke: 5,
      would_delete: 2,
      revoke: [
        { user_email: ann.userEmail, key: k2 },
        { user_email: ann.userEmail, key: k3 },
        { user_email: bo.userEmail, key: k2 },
        { user_email: bo.userEmail, key: k3 },
        { user_email: bo.userEmail, key: k1 },
      ],
      revoke_truncated: false,
      delete: [k2, k3],
      delete_truncated: false,
    });
    await collect();
    expect(await dryRunTotals(trigger.id, 2), "the first of each, the totals whole").toEqual({
      ...all,
      revoke: all.revoke.slice(0, 2),
      revoke_truncated: true,
    });
    await collect();
    expect(await dryRunTotals(trigger.id, 1)).toEqual({
      ...all,
      revoke: all.revoke.slice(0, 1),
      revoke_truncated: true,
      delete: [k2],
      delete_truncated: true,
    });
  });

  it("grants a lease to one holder at a time, hands it over once released, and claims each tick once", async () => {
    const { leases } = opened.store;
    const mirror = `m-${uid()}`;
    // Two processes that print alike (pid 1 in two containers on one host) are still two holders.
    const a = { id: `a-${uid()}`, name: "node-1:1", scope: "boot-1/pid:[4026532178]" };
    const b = { id: `b-${uid()}`, name: "node-1:1", scope: null };
    expect(await leases.acquire(mirror, a, 60)).toMatchObject({ epoch: 1, tookOver: null });
    expect(await leases.acquire(mirror, b, 60)).toBeNull();
    expect(await leases.acquire(mirror, a, 60), "asking again keeps the epoch").toMatchObject({ epoch: 1 });
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 1 })).toBe(true);
    expect(await leases.isHeld({ mirror, holder: b.id, epoch: 1 })).toBe(false);
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 2 })).toBe(false);
    const held = (await leases.holders()).get(mirror);
    expect(held).toMatchObject({
      mirror,
      holder: a.id,
      holderName: "node-1:1",
      holderScope: a.scope,
      epoch: 1,
      leaseSeconds: 60,
    });
    expect(held?.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await leases.release({ mirror, holder: b.id, epoch: 1 });
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 1 })).toBe(true);
    await leases.release({ mirror, holder: a.id, epoch: 1 });
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 1 })).toBe(false);
    expect((await leases.holders()).has(mirror)).toBe(false);
    expect(
      await leases.acquire(mirror, b, 60),
      "a released lease changes hands without a takeover, under a new epoch",
    ).toMatchObject({ epoch: 2, tookOver: null });
    expect(await leases.renew({ mirror, holder: a.id, epoch: 1 }, 60)).toBe(false);
    expect(await leases.renew({ mirror, holder: b.id, epoch: 2 }, 60)).toBe(true);
  });

  it("increments the epoch at every takeover and fences the old holder out, even once the new lease expired", async () => {
    const { leases } = opened.store;
    const mirror = `m-${uid()}`;
    const a = { id: `a-${uid()}`, name: "node-1:1", scope: "boot-1/pid:[4026531836]" };
    const b = { id: `b-${uid()}`, name: "node-2:1", scope: null };
    const a1 = { mirror, holder: a.id, epoch: 1 };
    expect(await leases.acquire(mirror, a, -1)).toMatchObject({ epoch: 1 }); // taken, and already expired
    expect(await leases.isHeld(a1)).toBe(false);
    expect(await leases.renew(a1, 60), "an expired lease is never renewed (re-taken)").toBe(false);
    const b2 = await leases.acquire(mirror, b, -1);
    expect(b2).toMatchObject({
      epoch: 2,
      tookOver: { mirror, holder: a.id, holderName: "node-1:1", holderScope: a.scope, epoch: 1 },
    });
    // b's lease has expired too: a's token still holds nothing, and a cannot release b's lease.
    expect(await leases.isHeld(a1)).toBe(false);
    expect(await leases.renew(a1, 60)).toBe(false);
    await leases.release(a1);
    const a3 = await leases.acquire(mirror, a, 60);
    expect(a3, "b's lease was still there to take over").toMatchObject({
      epoch: 3,
      tookOver: { holder: b.id, epoch: 2 },
    });
    expect(Date.parse(a3?.takenAt ?? "")).toBeGreaterThanOrEqual(Date.parse(b2?.expiresAt ?? ""));
    expect(await leases.isHeld(a1), "a's first pass stays fenced out").toBe(false);
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 3 })).toBe(true);
    expect(await leases.renew({ mirror, holder: a.id, epoch: 3 }, 60)).toBe(true);
    // A holder known dead (its process gone on this host) is replaced before its lease expires.
    expect(await leases.acquire(mirror, b, 60)).toBeNull();
    expect(await leases.acquire(mirror, b, 60, a.id)).toMatchObject({
      epoch: 4,
      tookOver: { holder: a.id, epoch: 3, leaseSeconds: 60 },
    });
    expect(await leases.isHeld({ mirror, holder: a.id, epoch: 3 })).toBe(false);
    expect(await leases.renew({ mirror, holder: a.id, epoch: 3 }, 60)).toBe(false);
  });

  it("keeps a mirror's schedule, locked by the transaction that changes it, and who started each pass", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    expect(await store.schedules.find(mirror)).toBeUndefined();
    const schedule = {
      mirror,
      incrementalSlot: T1,
      fullSlot: T2,
      due: { mode: "full" as const, reason: "catch-up" as const, since: T2, by: null },
      paused: { at: T3, by: "ana@host" },
    };
    await store.transaction(async (tx) => {
      expect(await tx.schedules.lock(mirror)).toBeUndefined();
      await tx.schedules.save(schedule);
    });
    expect(await store.schedules.find(mirror)).toEqual(schedule);
    await store.transaction(async (tx) => {
      const locked = await tx.schedules.lock(mirror);
      await tx.schedules.save({ ...(locked ?? schedule), due: null, paused: null, incrementalSlot: T3 });
    });
    expect(await store.schedules.find(mirror)).toEqual({
      ...schedule,
      due: null,
      paused: null,
      incrementalSlot: T3,
    });
    expect((await store.schedules.list()).map((s) => s.mirror)).toContain(mirror);

    const started = await intent(mirror, {
      mode: "incremental",
      intentAt: T2,
      startedBy: "instance-1",
      startedByName: "web-1:7",
      dueAt: T1,
      dueReason: "requested",
    });
    expect(started).toMatchObject({
      startedBy: "instance-1",
      startedByName: "web-1:7",
      dueAt: T1,
      dueReason: "requested",
    });
    await intent(mirror, { mode: "full", intentAt: T1 });
    expect(await store.triggers.lastIntentAt(mirror, ["full"])).toBe(T1);
    expect(await store.triggers.lastIntentAt(mirror, ["incremental", "full"])).toBe(T2);
    expect(await store.triggers.lastIntentAt(`m-${uid()}`, ["full"])).toBeUndefined();
  });

  it("lists the replicas whose heartbeat has not expired, and the controls newest first", async () => {
    const { store } = opened;
    const [alive, gone] = [`i-${uid()}`, `i-${uid()}`];
    await store.replicas.beat(
      { instanceId: alive, name: "web-1:1", scope: "boot/pid:[1]", startedAt: T1, slots: 2, running: 0 },
      60,
    );
    await store.replicas.beat(
      { instanceId: alive, name: "web-1:1", scope: "boot/pid:[1]", startedAt: T1, slots: 2, running: 1 },
      60,
    );
    await store.replicas.beat(
      { instanceId: gone, name: "web-2:1", scope: null, startedAt: T1, slots: 2, running: 0 },
      -1,
    );
    const live = (await store.replicas.live()).filter((r) => r.instanceId === alive || r.instanceId === gone);
    expect(live).toMatchObject([
      { instanceId: alive, name: "web-1:1", scope: "boot/pid:[1]", startedAt: T1, slots: 2, running: 1 },
    ]);
    expect(Date.parse(live[0]?.expiresAt ?? "")).toBeGreaterThan(Date.parse(live[0]?.seenAt ?? ""));
    await store.replicas.leave(alive);
    expect((await store.replicas.live()).some((r) => r.instanceId === alive)).toBe(false);

    const mirror = `m-${uid()}`;
    await store.controls.record({ mirror, action: "pause", mode: null, actor: "ana@host", at: T1 });
    await store.controls.record({ mirror, action: "trigger", mode: "full", actor: "http 127.0.0.1", at: T2 });
    await store.controls.record({ mirror: `m-${uid()}`, action: "resume", mode: null, actor: "x", at: T3 });
    expect(await store.controls.list({ mirror, limit: 10 })).toMatchObject([
      { mirror, action: "trigger", mode: "full", actor: "http 127.0.0.1", at: T2 },
      { mirror, action: "pause", mode: null, actor: "ana@host", at: T1 },
    ]);
    expect(await store.controls.list({ limit: 1 })).toMatchObject([{ action: "resume" }]);
  });
});
