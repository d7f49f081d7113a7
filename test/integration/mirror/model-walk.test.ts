/**
 * docs/reference/sync-semantics.md, as a seeded random walk: upstream changes a few things, a pass
 * runs (mostly full, sometimes incremental, now and then with one source failing), and the mirror
 * is compared with a model computed from the simulator's truth. Every message names the seed and
 * step, so a failure replays by running that seed alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { databaseProblems } from "../../helpers/db-snapshot.js";
import { TOMBSTONE } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import {
  type AccessId,
  type ChangeWithRun,
  changeDocument,
  changesAfter,
  checkEdited,
  checkFeed,
  type DocumentChange,
  difference,
  emptyMirror,
  failSource,
  type MirrorState,
  mirrorState,
  moveUser,
  type PassExport,
  pairOf,
  passExport,
  projectUsers,
  serverOfKey,
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
  // No pass here lags past the grace, so every pair holds since back to its last success.
  checkEdited(w.h, { ...pass, failed: failed !== undefined, since: null }, w.edited);
  checkFeed(pass, w.consumerLive);
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

type ChangeKind = DocumentChange | "leave" | "rejoin";

/** One random upstream change; returns what it did, for the assertion messages. */
function applyChange(w: Walk): string {
  const { h, rng } = w;
  const people = h.sim.people.list();
  const inProject = people.filter((p) => p.projectUser).map((p) => p.email);
  const left = people.filter((p) => !p.projectUser).map((p) => p.email);
  const kind = rng.weighted<ChangeKind>([
    ["edit", 6],
    ["add", 3],
    ["remove", 2],
    ["grant", 4],
    ["revoke", 4],
    // Two users stay, so a trigger always has someone to run as.
    ["leave", inProject.length > 2 ? 1 : 0],
    ["rejoin", left.length > 0 ? 1 : 0],
  ]);
  if (kind === "leave" || kind === "rejoin") {
    return moveUser(h, rng, kind, inProject, left);
  }
  return changeDocument(h, rng, kind, w.edited);
}

/**
 * Makes one (project user, server) source not succeed in the next pass: which pair, and how. Mostly
 * the only viewer of a document edited since the last good pass, so the next incremental must reach
 * back past that pair's lagging watermark to collect it.
 */
function failOneSource(w: Walk): { pair: string; how: string } {
  const { h, rng } = w;
  const inProject = projectUsers(h);
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
  return { pair, how: failSource(h, rng, pair) };
}
