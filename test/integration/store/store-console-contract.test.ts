/**
 * The store contract, console side, for both dialects: the pass history (errors kept per trigger,
 * runs and sources totalled, paged newest first), open problems (recorded, updated, cleared by
 * what shows them fixed, a declared config's apply error among them), `approve-sweep` taken by
 * exactly one full pass, and retention that never prunes what the sync logic reads.
 */
import { describe, expect, it } from "vitest";
import { pruneHistory } from "../../../src/console/prune-history.js";
import type { PassError, ProblemSighting } from "../../../src/store/console-types.js";
import type { Store } from "../../../src/store/store.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { createIntent, T1, T2, T3, uid } from "../../helpers/store-fixtures.js";

const T0 = "2026-02-01T10:00:00.000Z";
const ANN = "ann@example.test";

const failure = (error: string, extra: Partial<PassError> = {}): PassError => ({
  at: T2,
  syncId: null,
  userEmail: null,
  source: null,
  error,
  replica: "node-1:7",
  ...extra,
});

const sighting = (mirror: string, extra: Partial<ProblemSighting>): ProblemSighting => ({
  mirror,
  kind: "failed_source",
  subject: `s-${uid()}`,
  userEmail: ANN,
  serverInstanceId: "srv-1",
  source: "docs",
  syncId: "r-1",
  key: null,
  reason: "FAILED: boom",
  count: null,
  at: T1,
  ...extra,
});

/** A finished trigger of `mirror` with one run created at `runAt` (null: none). */
async function finishedPass(
  store: Store,
  mirror: string,
  t: { mode?: "full" | "incremental"; finishedAt: string; runAt?: string | null },
): Promise<number> {
  const trigger = await createIntent(store, mirror, { mode: t.mode ?? "full", intentAt: t.finishedAt });
  if (t.runAt !== null) {
    await store.triggers.activate(trigger.id, {
      triggerId: `t-${uid()}`,
      skipped: [],
      skippedCount: 0,
      adopted: false,
      startedAt: t.finishedAt,
    });
    await store.runs.insertMany(trigger.id, mirror, [
      { syncId: `r-${uid()}`, userEmail: ANN, status: "completed", createdAt: t.runAt ?? t.finishedAt },
    ]);
  }
  await store.history.addErrors(trigger.id, [failure("old")]);
  await store.triggers.finish(trigger.id, {
    outcome: "succeeded",
    message: "ok",
    summary: {},
    finishedAt: t.finishedAt,
  });
  return trigger.id;
}

describe.each(await storeDialects())("store contract, console: $name", (dialect) => {
  const opened = useStore(dialect);

  it("lists passes newest first with their runs' totals and every error, paged by row id", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const other = `m-${uid()}`;
    const first = await createIntent(store, mirror, {
      intentAt: T1,
      startedBy: "instance-a",
      startedByName: "node-1:7",
    });
    await store.history.addErrors(first.id, [failure("API_UNAUTHORIZED: token rejected")]);
    await store.history.addErrors(first.id, [failure("connect ECONNREFUSED"), failure("404 everywhere")]);
    await store.triggers.activate(first.id, {
      triggerId: `t-${uid()}`,
      skipped: [],
      skippedCount: 0,
      adopted: false,
      startedAt: T2,
    });
    const [read, unread] = [`r-${uid()}`, `r-${uid()}`];
    await store.runs.insertMany(first.id, mirror, [
      { syncId: read, userEmail: ANN, status: "completed", createdAt: T2 },
      { syncId: unread, userEmail: "bo@example.test", status: "failed", createdAt: T2 },
    ]);
    const source = (name: string, exportStatus: string) => ({
      source: name,
      sourceType: name,
      serverInstanceId: `srv-${name}`,
      taskStatus: "COMPLETED",
      exportStatus,
      counts: null,
    });
    await store.runs.saveFirstPage(read, {
      schemaVersion: "1",
      engineVersion: null,
      diagnostics: {},
      sources: [source("docs", "ok"), source("mail", "degraded")],
    });
    await store.runs.saveFirstPage(unread, {
      schemaVersion: "1",
      engineVersion: null,
      diagnostics: {},
      sources: [source("docs", "ok")],
    });
    await store.runs.checkpoint(read, null, {
      upserted: 4,
      unchanged: 2,
      rejected: 1,
      keysNew: 3,
      keysChanged: 1,
    });
    await store.runs.checkpoint(unread, 100, {
      upserted: 1,
      unchanged: 0,
      rejected: 0,
      keysNew: 1,
      keysChanged: 0,
    });
    await store.triggers.finish(first.id, {
      outcome: "partial",
      message: "some",
      summary: { keys: { unchanged: 9 } },
      finishedAt: T3,
    });
    const second = await createIntent(store, mirror, { intentAt: T3, mode: "incremental", since: T1 });
    await createIntent(store, other, { intentAt: T3 });

    const [newest, older] = await store.history.list({ mirror, limit: 5 });
    expect(newest?.trigger).toMatchObject({ id: second.id, state: "intent", startedBy: null });
    expect(newest).toMatchObject({ summary: null, runs: {}, sources: {}, errors: [] });
    expect(older?.trigger).toMatchObject({
      id: first.id,
      startedBy: "instance-a",
      startedByName: "node-1:7",
    });
    expect(older).toMatchObject({
      summary: { keys: { unchanged: 9 } },
      runs: { completed: 1, failed: 1 },
      sources: { ok: 1, degraded: 1 },
      rows: { upserted: 5, unchanged: 2, rejected: 1, keysNew: 4, keysChanged: 1 },
    });
    expect(older?.errors.map((e) => e.error)).toEqual([
      "API_UNAUTHORIZED: token rejected",
      "connect ECONNREFUSED",
      "404 everywhere",
    ]);
    expect(older?.errors[0]).toEqual(failure("API_UNAUTHORIZED: token rejected"));
    // What a pass's own summary reads when it settles: the same errors, of that trigger only.
    expect(await store.history.errors(first.id)).toEqual(older?.errors);
    expect(await store.history.errors(second.id)).toEqual([]);

    const page = await store.history.list({ mirror, limit: 1, before: second.id });
    expect(page.map((p) => p.trigger.id)).toEqual([first.id]);
    expect(await store.history.list({ mirror, limit: 5, before: first.id })).toEqual([]);
    const everyone = (await store.history.list({ limit: 1000 })).map((p) => p.trigger.mirror);
    expect(everyone).toEqual(expect.arrayContaining([mirror, other]));
  });

  it("records a problem once per subject, keeps its first sighting and clears it by what fixes it", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const pair = { mirror, userEmail: ANN, serverInstanceId: "srv-1" };
    const source = sighting(mirror, { subject: "source-ann-1" });
    await store.problems.record([source]);
    await store.problems.record([{ ...source, kind: "incomplete_source", reason: "INCOMPLETE", at: T2 }]);
    await store.problems.record([
      sighting(mirror, { kind: "skipped_pair", subject: "skip-ann-1", source: null }),
      sighting(mirror, { kind: "rejected_row", subject: "row-ann-k1", key: "k1" }),
      sighting(mirror, { kind: "rejected_row", subject: "row-ann-nokey", serverInstanceId: null, count: 2 }),
      sighting(mirror, { kind: "failed_source", subject: "source-bo-1", userEmail: "bo@example.test" }),
    ]);
    const listed = await store.problems.list({ mirror, limit: 100 });
    expect(listed.find((p) => p.subject === "source-ann-1")).toMatchObject({
      kind: "incomplete_source",
      reason: "INCOMPLETE",
      firstSeenAt: T1,
      lastSeenAt: T2,
    });
    expect(listed).toHaveLength(5);
    const counts = (await store.problems.countByKind()).filter((c) => c.mirror === mirror);
    expect(counts).toEqual(
      expect.arrayContaining([
        { mirror, kind: "incomplete_source", n: 1 },
        { mirror, kind: "rejected_row", n: 2 },
      ]),
    );

    await store.problems.clearPair(pair, ["failed_source", "incomplete_source", "rejected_row"]);
    const left = (await store.problems.list({ mirror, limit: 100 })).map((p) => p.subject).sort();
    expect(left, "another user's problem and another kind stay").toEqual(["skip-ann-1", "source-bo-1"]);
    await store.problems.clearKindExcept(mirror, "skipped_pair", ["skip-other"]);
    await store.problems.clearKindExcept(mirror, "failed_source", ["source-bo-1"]);
    expect((await store.problems.list({ mirror, limit: 100 })).map((p) => p.subject)).toEqual([
      "source-bo-1",
    ]);
  });

  it("clears a rejected row once a later run ingested its key, not before", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    await store.problems.record([
      sighting(mirror, { kind: "rejected_row", subject: "row-a", key: "key-a" }),
      sighting(mirror, { kind: "rejected_row", subject: "row-b", key: "key-b" }),
    ]);
    const seen = (key: string, seenAt: string) => ({
      mirror,
      userEmail: ANN,
      key,
      serverInstanceId: "srv-1",
      source: "docs",
      seenAt,
    });
    await store.transaction(async (tx) => {
      await tx.access.seeAll([seen("key-a", T1), seen("key-b", T3)]);
      await tx.problems.clearRowsSeen(mirror, ANN, T2);
    });
    expect((await store.problems.list({ mirror, limit: 10 })).map((p) => p.key)).toEqual(["key-a"]);
  });

  it("lists a declared sync config's apply error as a problem until an apply succeeds", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    await store.syncConfigs.recordError(mirror, { error: "user left", at: T1, createRefused: false });
    await store.syncConfigs.recordError(mirror, { error: "still left", at: T2, createRefused: false });
    expect(await store.problems.list({ mirror, limit: 10 })).toEqual([
      expect.objectContaining({ mirror, kind: "config_error", firstSeenAt: T1, lastSeenAt: T2 }),
    ]);
    expect((await store.problems.list({ mirror, limit: 10 }))[0]?.reason).toContain("still left");
    expect((await store.problems.countByKind()).filter((c) => c.mirror === mirror)).toEqual([
      { mirror, kind: "config_error", n: 1 },
    ]);
    await store.syncConfigs.recordApplied(mirror, {
      syncConfigId: "cfg",
      projectId: "p",
      name: "Wiki",
      origin: "created",
      adoptedAt: null,
      appliedHash: "h",
      at: T3,
      fullOwed: false,
    });
    expect(await store.problems.list({ mirror, limit: 10 })).toEqual([]);
    await store.syncConfigs.recordError(mirror, { error: "again", at: T3, createRefused: false });
    expect((await store.problems.list({ mirror, limit: 10 }))[0]).toMatchObject({ firstSeenAt: T3 });
  });

  it("approves the held sweeps pair by pair, taken by exactly one full pass", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const held = (user: string, count: number) =>
      sighting(mirror, { kind: "held_sweep", subject: `sweep-${user}`, userEmail: user, count });
    const ann = { mirror, userEmail: ANN, serverInstanceId: "srv-1" };
    const bo = { ...ann, userEmail: "bo@example.test" };
    await store.problems.record([sighting(mirror, { kind: "failed_source" })]);
    expect(await store.approvals.approve(mirror, { by: "ann@host", at: T1 }), "nothing held").toBeNull();
    await store.problems.record([held(ANN, 30), held(bo.userEmail, 12)]);
    await store.approvals.approve(mirror, { by: "first@host", at: T1 });
    const approval = { mirror, upTo: 42, pairs: 2, by: "ann@host", at: T2 };
    expect(
      await store.approvals.approve(mirror, { by: "ann@host", at: T2 }),
      "replaces the pending one",
    ).toEqual(approval);
    expect((await store.approvals.pending()).filter((a) => a.mirror === mirror)).toEqual([approval]);

    const taker = await createIntent(store, mirror, { intentAt: T2 });
    const next = await createIntent(store, mirror, { intentAt: T3 });
    await store.approvals.take(taker.id, mirror, [ann, bo]);
    await store.approvals.take(next.id, mirror, [ann, bo]);
    expect((await store.approvals.pending()).filter((a) => a.mirror === mirror)).toEqual([]);
    expect(await store.approvals.allowance(taker.id, ann)).toBe(30);
    expect(await store.approvals.allowance(taker.id, { ...ann, serverInstanceId: "srv-2" })).toBeNull();
    expect(await store.approvals.allowance(next.id, ann), "one pass only").toBeNull();
    await store.approvals.use(taker.id, ann, 28);
    const [pass] = await store.history.list({ mirror, limit: 1, before: next.id });
    expect(pass?.sweepApproval).toEqual({ ...approval, used: 28 });
    const [other] = await store.history.list({ mirror, limit: 1 });
    expect(other?.sweepApproval).toBeNull();

    await store.problems.record([held(ANN, 50)]);
    await store.approvals.approve(mirror, { by: "ann@host", at: T3 });
    await store.approvals.take(taker.id, mirror, [ann]);
    expect(await store.approvals.allowance(taker.id, ann), "a pass takes one approval").toBe(30);
  });

  it("takes the approvals of the pairs the pass sweeps, and drops those whose sweep is no longer held", async () => {
    const { store } = opened;
    const mirror = `m-${uid()}`;
    const pairOf = (userEmail: string) => ({ mirror, userEmail, serverInstanceId: "srv-1" });
    const [ann, bo, cy] = [pairOf(ANN), pairOf("bo@example.test"), pairOf("cy@example.test")];
    await store.problems.record(
      [ann, bo, cy].map((p, i) =>
        sighting(mirror, {
          kind: "held_sweep",
          subject: `sweep-${p.userEmail}`,
          userEmail: p.userEmail,
          count: 10 + i,
        }),
      ),
    );
    await store.approvals.approve(mirror, { by: "ann@host", at: T1 });
    // cy's sweep applied or cy was retired since: its approval approves nothing any more.
    await store.problems.clearPair(cy, ["held_sweep"]);
    const pendingOf = async () => (await store.approvals.pending()).filter((a) => a.mirror === mirror);
    expect(await pendingOf(), "a pair's approval counts while its sweep is held").toEqual([
      { mirror, upTo: 21, pairs: 2, by: "ann@host", at: T1 },
    ]);
    expect(await store.approvals.allowance(null, cy)).toBeNull();

    const taker = await createIntent(store, mirror, { intentAt: T2 });
    await store.approvals.take(taker.id, mirror, [ann, cy]);
    expect(await store.approvals.allowance(taker.id, ann)).toBe(10);
    expect(await store.approvals.allowance(taker.id, bo), "bo's source did not succeed").toBeNull();
    expect(await store.approvals.allowance(taker.id, cy)).toBeNull();
    expect(await store.approvals.allowance(null, bo), "pending for the next full pass").toBe(11);
    expect(await pendingOf()).toEqual([{ mirror, upTo: 11, pairs: 1, by: "ann@host", at: T1 }]);

    // The same trigger resumed after a crash, a new approval made in between: nothing taken twice.
    await store.problems.record([
      sighting(mirror, { kind: "held_sweep", subject: `sweep-${ANN}`, userEmail: ANN, count: 40 }),
    ]);
    await store.approvals.approve(mirror, { by: "bo@host", at: T2 });
    await store.approvals.take(taker.id, mirror, [ann]);
    expect(await store.approvals.allowance(taker.id, ann), "a pass takes a pair's approval once").toBe(10);
    expect(await pendingOf()).toEqual([{ mirror, upTo: 51, pairs: 2, by: "bo@host", at: T2 }]);

    // Neither a trigger whose first take found nothing to take.
    const next = await createIntent(store, mirror, { intentAt: T3 });
    await store.approvals.take(next.id, mirror, []);
    await store.problems.clearPair(ann, ["held_sweep"]);
    await store.approvals.take(next.id, mirror, [bo]);
    expect(await store.approvals.allowance(next.id, bo)).toBe(11);
    expect(await store.approvals.allowance(null, ann)).toBeNull();
    expect(await pendingOf()).toEqual([]);
    const [pass] = await store.history.list({ mirror, limit: 1 });
    expect(pass?.sweepApproval).toMatchObject({ pairs: 1, upTo: 11, used: 0 });
  });

  describe("retention", () => {
    const own = useStore(dialect);

    it("runs a round with nothing to prune, as after most passes, in one transaction", async () => {
      const { store } = own;
      let transactions = 0;
      const counting: Store = {
        ...store,
        transaction: (fn) => {
          transactions++;
          return store.transaction(fn);
        },
      };
      await store.problems.record([sighting(`m-${uid()}`, { at: T3 })]);
      expect(await pruneHistory(counting, 36_500, new Date())).toEqual({ passes: 0, problems: 0 });
      expect(transactions).toBe(1);
    });

    it("prunes old finished passes with their runs and errors, never what the sync logic reads", async () => {
      const { store } = own;
      const mirror = `m-${uid()}`;
      const oldFull = await finishedPass(store, mirror, { finishedAt: T0, runAt: T0 });
      const newestRun = await finishedPass(store, mirror, {
        mode: "incremental",
        finishedAt: "2026-02-02T10:00:00.000Z",
        runAt: T3,
      });
      const oldIncremental = await finishedPass(store, mirror, {
        mode: "incremental",
        finishedAt: "2026-02-03T10:00:00.000Z",
      });
      const lastIncremental = await finishedPass(store, mirror, {
        mode: "incremental",
        finishedAt: "2026-02-04T10:00:00.000Z",
        runAt: null,
      });
      const lastFull = await finishedPass(store, mirror, {
        finishedAt: "2026-02-05T10:00:00.000Z",
        runAt: null,
      });
      const inFlight = await createIntent(store, mirror, { intentAt: T0 });
      const recentMirror = `m-${uid()}`;
      const recent = await finishedPass(store, recentMirror, { finishedAt: T2 });
      const recentOther = await finishedPass(store, recentMirror, { finishedAt: T3 });
      await store.problems.record([
        sighting(mirror, { subject: "stale", at: T0 }),
        sighting(mirror, { subject: "fresh", at: T2 }),
      ]);
      const newestBefore = await store.runs.newestCreatedAt(mirror);
      // Scratch a dry run killed before its end left behind, of a pass pruned and of one kept.
      for (const t of [oldFull, recent]) await store.dryRun.seen(t, ANN, ["k"]);

      const never = await store.history.prunedNever();
      expect(never).toEqual(expect.arrayContaining([newestRun, lastIncremental, lastFull, inFlight.id]));
      expect(never).not.toContain(oldFull);
      expect(await store.history.prune(T1, 1, never), "a batch at a time").toBe(1);
      expect(await store.history.prune(T1, 100, never)).toBe(1);
      expect(await store.history.prune(T1, 100, never)).toBe(0);
      expect(await store.problems.pruneStale(T1)).toBe(1);

      const kept = (await store.history.list({ limit: 100 })).map((p) => p.trigger.id).sort((a, b) => a - b);
      expect(kept).toEqual(
        [newestRun, lastIncremental, lastFull, inFlight.id, recent, recentOther].sort((a, b) => a - b),
      );
      expect(kept).not.toContain(oldFull);
      expect(kept).not.toContain(oldIncremental);
      expect(await store.runs.newestCreatedAt(mirror), "adoption's bound is unchanged").toBe(newestBefore);
      expect(
        await own.query("SELECT trigger_row_id FROM pass_errors WHERE trigger_row_id = ?", oldFull),
      ).toEqual([]);
      expect(await own.query("SELECT sync_id FROM runs WHERE trigger_row_id = ?", oldFull)).toEqual([]);
      expect(await own.query("SELECT trigger_row_id AS t FROM dry_run_seen")).toEqual([{ t: recent }]);
      expect(await store.triggers.findInFlight(mirror)).toMatchObject({ id: inFlight.id });
      expect((await store.triggers.lastFinished(mirror))?.id).toBe(lastFull);
      expect((await store.problems.list({ mirror, limit: 10 })).map((p) => p.subject)).toEqual(["fresh"]);
    });
  });
});
