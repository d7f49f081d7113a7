/**
 * docs/reference/sync-semantics.md, as a seeded random walk: upstream changes a few things, a pass
 * runs (mostly full, sometimes incremental, now and then with one source failing), and the mirror
 * is compared with a model computed from the simulator's truth. Every message names the seed and
 * step, so a failure replays by running that seed alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/simulator/index.js";
import { databaseProblems } from "../../helpers/db-snapshot.js";
import { TOMBSTONE } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import {
  type AccessId,
  type ChangeWithRun,
  changesAfter,
  difference,
  emptyMirror,
  holdersOf,
  type MirrorState,
  mirrorState,
  type PassExport,
  passExport,
  sorted,
  type Truth,
  upstreamTruth,
  type WalkRandom,
  walkRandom,
} from "../../helpers/walk-model.js";

const SEEDS = [7, 1009, 48271, 65537];
const STEPS = 15;

let h: Harness;
afterEach(async () => {
  await h?.close();
});

interface Walk {
  h: Harness;
  rng: WalkRandom;
  /** Keys the mirror has held live at some point. */
  everLive: Set<string>;
  /** Keys edited or added upstream since the last pass that succeeded. */
  edited: Set<string>;
  /** What a consumer replaying the feed from seq 0 holds live. */
  consumerLive: Set<string>;
  lastOutcome: string | undefined;
  lastFull: boolean;
}

interface Pass {
  ctx: string;
  full: boolean;
  /** `user|server_instance_id` of the source made to fail, if any. */
  failed: string | undefined;
  before: MirrorState;
  after: MirrorState;
  truth: Truth;
  exported: PassExport;
  feed: ChangeWithRun[];
}

const serverOfKey = (key: string) => key.split(":")[1] ?? "";
const pairOf = (id: AccessId) => {
  const [user = "", key = ""] = id.split("|");
  return `${user}|${serverOfKey(key)}`;
};

describe("a seeded random walk of upstream changes and passes", () => {
  it.each(SEEDS)("keeps the mirror equal to the model (seed %i)", async (seed) => {
    h = await createHarness({
      sim: { seed, docs: 36, users: 4, serversPerType: { notion: 1, github: 1, google_docs: 1 } },
      defaults: { delete_after_missed_full: 1, max_delete_fraction: 1 },
    });
    const walk: Walk = {
      h,
      rng: walkRandom(seed),
      everLive: new Set(),
      edited: new Set(),
      consumerLive: new Set(),
      lastOutcome: undefined,
      lastFull: true,
    };
    await runPass(walk, `seed ${seed} step 0 (first pass)`, [], true);
    for (let step = 1; step <= STEPS; step++) {
      const actions = walk.rng.chance(0.12)
        ? []
        : Array.from({ length: walk.rng.int(1, 4) }, () => applyChange(walk));
      // After a partial pass, mostly an incremental: it must reach back for what the pass missed.
      const full = walk.rng.chance(walk.lastOutcome === "partial" ? 0.4 : 0.7);
      await runPass(walk, `seed ${seed} step ${step} [${actions.join(", ")}]`, actions, full);
    }
  });
});

async function runPass(w: Walk, label: string, actions: string[], full: boolean): Promise<void> {
  const failure = w.lastOutcome !== undefined && w.rng.chance(0.2) ? failOneSource(w) : undefined;
  const failed = failure?.pair;
  const ctx = `${label} ${full ? "full" : "incremental"}${failure ? ` (${failure.how}: ${failed})` : ""}`;
  const before = w.lastOutcome === undefined ? emptyMirror() : mirrorState(w.h);
  const summary = await w.h.sync({ full });
  w.h.sim.clearOutcomes();
  const pass: Pass = {
    ctx,
    full,
    failed,
    before,
    after: mirrorState(w.h),
    truth: upstreamTruth(w.h),
    exported: await passExport(w.h, summary.trigger_id),
    feed: changesAfter(w.h, before.lastSeq),
  };
  expect(databaseProblems(w.h), ctx).toEqual([]);
  expect(summary.outcome, ctx).toBe(failed ? "partial" : "succeeded");
  expect(summary.mode, ctx).toBe(full ? "full" : "incremental");
  if (failed) expect(pass.exported.succeeded.has(failed), `${ctx}: the failure was not applied`).toBe(false);
  const liveWithAccess = new Set([...pass.after.access].map((id) => id.split("|")[1] ?? ""));
  expect(sorted(pass.after.live), `${ctx}: live keys are the keys someone may see`).toEqual(
    sorted(liveWithAccess),
  );
  if (full) checkFull(w, pass);
  else checkIncremental(pass);
  checkEdited(w, pass);
  checkFeed(w, pass);
  if (actions.length === 0 && !failed && w.lastOutcome === "succeeded" && (w.lastFull || !full))
    expect(pass.feed, `${ctx}: a pass with nothing new records nothing`).toEqual([]);
  for (const key of pass.after.live) w.everLive.add(key);
  w.lastOutcome = summary.outcome;
  w.lastFull = full;
}

/**
 * A full pass: exactly the truth for every pair whose source succeeded; a pair whose source did
 * not succeed keeps what it held and gains what arrived.
 */
function checkFull(w: Walk, p: Pass): void {
  const { ctx, failed, before, after, truth, exported } = p;
  const others = (ids: Iterable<AccessId>) => new Set([...ids].filter((id) => pairOf(id) !== failed));
  const ofFailed = (ids: Iterable<AccessId>) => sorted([...ids].filter((id) => pairOf(id) === failed));
  expect(sorted(others(after.access)), `${ctx}: resource_access`).toEqual(sorted(others(truth.access)));
  expect(ofFailed(after.access), `${ctx}: a failed source's access is kept`).toEqual(
    ofFailed(new Set([...before.access, ...exported.seen])),
  );
  if (!failed) expect(sorted(after.live), `${ctx}: live resources`).toEqual(sorted(truth.live));
  for (const key of after.live) {
    const hash = exported.hashes.get(key);
    if (hash !== undefined || !failed)
      expect(after.rows.get(key)?.content_hash, `${ctx}: content_hash of ${key}`).toBe(hash);
  }
  for (const key of new Set([...w.everLive, ...after.rows.keys()])) {
    if (after.live.has(key)) continue;
    expect(after.rows.get(key), `${ctx}: ${key} is a tombstone`).toMatchObject(TOMBSTONE);
  }
}

/** An incremental pass revokes and deletes nothing, and holds whatever its sources exported. */
function checkIncremental(p: Pass): void {
  const { ctx, before, after, exported } = p;
  expect(difference(before.access, after.access), `${ctx}: access revoked by an incremental`).toEqual([]);
  expect(difference(before.live, after.live), `${ctx}: keys deleted by an incremental`).toEqual([]);
  expect(difference(exported.seen, after.access), `${ctx}: exported access missing`).toEqual([]);
  for (const [key, hash] of exported.hashes)
    expect(after.rows.get(key)?.content_hash, `${ctx}: content_hash of ${key}`).toBe(hash);
}

/**
 * Every document edited or added since the last pass that succeeded, live and visible to a pair
 * whose source succeeded in this pass, was exported and holds the new content_hash.
 */
function checkEdited(w: Walk, p: Pass): void {
  const docs = new Map(w.h.sim.docs.list().map((d) => [d.key, d]));
  for (const key of w.edited) {
    const doc = docs.get(key);
    const reachable = doc?.visibleTo.some(
      (u) => p.truth.projectUsers.has(u) && p.exported.succeeded.has(`${u}|${serverOfKey(key)}`),
    );
    if (!doc || doc.deleted || !reachable) continue;
    const hash = p.exported.hashes.get(key);
    expect(
      hash,
      `${p.ctx}: ${doc.docId} (${key}) edited since the last good pass was not exported`,
    ).toBeDefined();
    expect(p.after.rows.get(key)?.content_hash, `${p.ctx}: content_hash of edited ${key}`).toBe(hash);
    expect(p.after.live.has(key), `${p.ctx}: edited ${key} is live`).toBe(true);
    w.edited.delete(key);
  }
  if (!p.failed) w.edited.clear();
}

/** The per-run feed rules, then a consumer replaying it in order. */
function checkFeed(w: Walk, p: Pass): void {
  const { ctx, before, after, feed } = p;
  const perRun = new Map<string, number>();
  for (const c of feed) {
    const id = `${c.sync_id ?? "sweep"} ${c.key}`;
    perRun.set(id, (perRun.get(id) ?? 0) + 1);
  }
  expect(
    [...perRun].filter(([, n]) => n > 1),
    `${ctx}: more than one change per key per run`,
  ).toEqual([]);
  const keys = new Set([...before.rows.keys(), ...after.rows.keys(), ...feed.map((c) => c.key)]);
  for (const key of keys) {
    const ops = feed.filter((c) => c.key === key).map((c) => c.op);
    const was = before.live.has(key);
    const is = after.live.has(key);
    const what = `${ctx}: changes of ${key} (${was ? "live" : "absent"} -> ${is ? "live" : "absent"})`;
    if (!was && is) expect(ops, what).toContain("upsert");
    else if (was && !is) expect(ops.at(-1), what).toBe("delete");
    else if (!was && !is) expect(ops, what).toEqual([]);
    else if (before.rows.get(key)?.content_hash !== after.rows.get(key)?.content_hash)
      expect(ops, what).toContain("upsert");
    else if (holdersOf(before.access, key).join() === holdersOf(after.access, key).join())
      expect(ops, what).toEqual([]);
    else expect(new Set(ops), what).toEqual(new Set(["access"]));
  }
  replayFeed(w, p);
}

/** A consumer applying the ops in order holds live exactly the keys the mirror holds live. */
function replayFeed(w: Walk, { ctx, feed, after }: Pass): void {
  for (const c of feed) {
    if (c.op === "upsert") w.consumerLive.add(c.key);
    else {
      const known = w.consumerLive.has(c.key);
      expect(known, `${ctx}: ${c.op} #${c.seq} of a key the feed never made live`).toBe(true);
      if (c.op === "delete") w.consumerLive.delete(c.key);
    }
  }
  expect(sorted(w.consumerLive), `${ctx}: a consumer replaying the feed`).toEqual(sorted(after.live));
}

type ChangeKind = "edit" | "add" | "remove" | "grant" | "revoke" | "leave" | "rejoin";
const repeat = (kind: ChangeKind, n: number): ChangeKind[] => Array<ChangeKind>(n).fill(kind);

/** One random upstream change; returns what it did, for the assertion messages. */
function applyChange(w: Walk): string {
  const { h, rng } = w;
  const live = h.sim.docs.list().filter((d) => !d.deleted);
  const people = h.sim.people.list();
  const inProject = people.filter((p) => p.projectUser).map((p) => p.email);
  const left = people.filter((p) => !p.projectUser).map((p) => p.email);
  const kind = rng.pick<ChangeKind>([
    ...repeat("edit", 6),
    ...repeat("add", 3),
    ...repeat("remove", 2),
    ...repeat("grant", 4),
    ...repeat("revoke", 4),
    // Two users stay, so a trigger always has someone to run as.
    ...repeat("leave", inProject.length > 2 ? 1 : 0),
    ...repeat("rejoin", left.length > 0 ? 1 : 0),
  ]);
  if (kind === "leave" || kind === "rejoin") {
    const user = rng.pick(kind === "leave" ? inProject : left);
    if (kind === "leave") h.sim.people.leaveProject(user);
    else h.sim.people.joinProject(user);
    return `${kind} ${user}`;
  }
  if (kind === "add") {
    const visibleTo = h.sim.users.filter(() => rng.chance(0.4));
    const server = rng.pick(h.sim.servers).server_instance_id;
    const docId = h.sim.docs.add({ server_instance_id: server, visibleTo });
    w.edited.add(h.sim.docs.get(docId).key);
    return `add ${docId} for [${visibleTo}]`;
  }
  const doc = rng.pick(live);
  if (kind === "edit") {
    h.sim.docs.edit(doc.docId);
    w.edited.add(doc.key);
    return `edit ${doc.docId}`;
  }
  if (kind === "remove") {
    h.sim.docs.remove(doc.docId);
    return `remove ${doc.docId}`;
  }
  const user = rng.pick(h.sim.users);
  const visibleTo =
    kind === "grant" ? [...new Set([...doc.visibleTo, user])] : doc.visibleTo.filter((u) => u !== user);
  h.sim.docs.setVisibility(doc.docId, visibleTo);
  return `${kind} ${user} on ${doc.docId}`;
}

/** Ways a source does not succeed (the task, or the export status of a task that completed). */
const FAILURES: Outcome[] = [
  { task: "FAILED" },
  { task: "INCOMPLETE", includeFraction: 0.5 },
  { task: "COMPLETED", exportStatus: "degraded" },
  { task: "COMPLETED", exportStatus: "authentication_required" },
];

/**
 * Makes one (project user, server) source not succeed in the next pass: which pair, and how. Mostly
 * the only viewer of a document edited since the last good pass, so the next incremental must reach
 * back past that pair's lagging watermark to collect it.
 */
function failOneSource(w: Walk): { pair: string; how: string } {
  const { h, rng } = w;
  const inProject = new Set(
    h.sim.people
      .list()
      .filter((p) => p.projectUser)
      .map((p) => p.email),
  );
  const soleViewers = h.sim.docs.list().flatMap((d) => {
    const viewers = d.visibleTo.filter((u) => inProject.has(u));
    return !d.deleted && w.edited.has(d.key) && viewers.length === 1
      ? [`${viewers[0]}|${serverOfKey(d.key)}`]
      : [];
  });
  const pair =
    soleViewers.length > 0 && rng.chance(0.7)
      ? rng.pick(soleViewers)
      : `${rng.pick([...inProject])}|${rng.pick(h.sim.servers).server_instance_id}`;
  const [user, server] = pair.split("|");
  const outcome = rng.pick(FAILURES);
  h.sim.setOutcome({ user, server_instance_id: server }, { ...outcome, times: 1 });
  return { pair, how: outcome.exportStatus ?? outcome.task };
}
