/**
 * docs/reference/sync-semantics.md (users who left, pairs out of reach, the mass-delete guard), as
 * a seeded random walk: besides document changes, pairs go out of reach and come back, a server is
 * paused, users leave and rejoin, many of one pair's documents go at once, and the service's clock
 * jumps hours ahead. After every pass (mostly full, some incremental, now and then with
 * `--allow-mass-delete`) the mirror is compared with a model computed from the simulator's truth
 * and the pair facts the walk itself set. Every message names the seed and step.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AuthStatus } from "../../../src/simulator/people.js";
import { databaseProblems } from "../../helpers/db-snapshot.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import {
  type AccessId,
  changeDocument,
  changesAfter,
  checkEdited,
  checkFeed,
  checkRows,
  type DocumentChange,
  difference,
  emptyMirror,
  failSource,
  keyOf,
  type MirrorState,
  mirrorState,
  moveUser,
  type PassExport,
  pairOf,
  passExport,
  projectUsers,
  seedsForStore,
  sorted,
  type Truth,
  upstreamTruth,
  type WalkRandom,
  walkRandom,
} from "../../helpers/walk-model.js";

const SEEDS = [7, 13, 16, 30];
const STEPS = 22;
const GRACE_HOURS = 72;
const GRACE_MS = GRACE_HOURS * 3_600_000;
const OVERLAP_SECONDS = 300;
const MAX_DELETE_FRACTION = 0.5;
/** The guard holds a sweep only above this many keys, whatever the fraction. */
const GUARD_MIN_KEYS = 10;
/** At most this many pairs out of reach at once, so some pair always runs. */
const MAX_LOCKED = 3;
const LOCKED_STATUSES: AuthStatus[] = ["not_authenticated", "needs_project_admin", "needs_tenant_admin"];

let h: Harness;
afterEach(async () => {
  await h?.close();
});

/** What the mirror should know of one (user, server) pair. */
interface PairModel {
  /** Server created_at (ms) of the last run in which the pair's source succeeded. */
  watermark: number;
  /** Left, or past its grace at a full pass; running again ends it. */
  retired: boolean;
  /** Skipped as not_a_project_user by the latest trigger that listed it. */
  leftSkip: boolean;
}

/** What the walk saw happen, so a seed that stops exercising a rule fails rather than passes. */
interface Seen {
  held: number;
  /** Applied: more than the fraction, but 10 keys or fewer. */
  appliedFewKeys: number;
  /** Applied: more than 10 keys, but no more than the fraction. */
  appliedUnderFraction: number;
  allowedMassDelete: number;
  keptInGrace: number;
  lostPastGrace: number;
  lostForLeaving: number;
}

interface Walk {
  h: Harness;
  rng: WalkRandom;
  configId: string;
  /** The sync config lists its users (leavers are skipped as not_a_project_user), or is all-users (they are absent). */
  explicit: boolean;
  everLive: Set<string>;
  /** Keys edited or added upstream since the last pass without a failed source. */
  edited: Set<string>;
  consumerLive: Set<string>;
  pairs: Map<string, PairModel>;
  /** `user|server` pairs whose auth the walk made not accessible. */
  locked: Set<string>;
  paused: string | undefined;
  /** What the last full pass held, as mirror_state and the gauge keep it. */
  heldRevocations: number;
  first: boolean;
  seen: Seen;
}

type SkipReason = "not_a_project_user" | "not_syncable" | "not_accessible";

interface PassPlan {
  full: boolean;
  allowMassDelete: boolean;
  /** The since the model expects (ms), or null for a full snapshot. */
  since: number | null;
  /** The pairs the trigger should skip, and why. */
  skipped: Map<string, SkipReason>;
}

describe("a seeded random walk of pairs out of reach, leavers and mass deletes", () => {
  it.each(seedsForStore(SEEDS))("keeps the mirror equal to the model (seed %i)", async (seed) => {
    const explicit = seed % 2 === 1;
    const mirror: Record<string, unknown> = {};
    h = await createHarness({
      sim: { seed, docs: 80, users: 4, serversPerType: { notion: 1, github: 1, google_docs: 1 } },
      mirror,
      defaults: {
        delete_after_missed_full: 1,
        max_delete_fraction: MAX_DELETE_FRACTION,
        inaccessible_grace_hours: GRACE_HOURS,
        since_overlap_seconds: OVERLAP_SECONDS,
      },
    });
    let configId = h.sim.syncConfigId;
    if (explicit) {
      configId = h.sim.configs.create({ userEmails: h.sim.users });
      mirror.sync_config_id = configId;
      h.writeConfig();
    }
    const walk: Walk = {
      h,
      rng: walkRandom(seed),
      configId,
      explicit,
      everLive: new Set(),
      edited: new Set(),
      consumerLive: new Set(),
      pairs: new Map(),
      locked: new Set(),
      paused: undefined,
      heldRevocations: 0,
      first: true,
      seen: {
        held: 0,
        appliedFewKeys: 0,
        appliedUnderFraction: 0,
        allowedMassDelete: 0,
        keptInGrace: 0,
        lostPastGrace: 0,
        lostForLeaving: 0,
      },
    };
    await runPass(walk, `seed ${seed} step 0 (first pass)`, { full: true, allowMassDelete: false });
    for (let step = 1; step <= STEPS; step++) {
      const actions = walk.rng.chance(0.1)
        ? []
        : Array.from({ length: walk.rng.int(1, 4) }, () => applyChange(walk));
      const full = walk.rng.chance(0.65);
      const allowMassDelete = full && walk.rng.chance(walk.heldRevocations > 0 ? 0.4 : 0.05);
      await runPass(walk, `seed ${seed} step ${step} [${actions.join(", ")}]`, { full, allowMassDelete });
    }
    // A seed that stops exercising a rule would pass without checking it.
    for (const [what, n] of Object.entries(walk.seen))
      expect(n, `seed ${seed}: how often the walk saw ${what}`).toBeGreaterThan(0);
  });
});

const allPairs = (h: Harness): string[] =>
  h.sim.users.flatMap((u) => h.sim.servers.map((s) => `${u}|${s.server_instance_id}`));

/** The pass the model expects: mode, since, and which pairs the trigger skips. */
function planPass(w: Walk, full: boolean, allowMassDelete: boolean): PassPlan {
  const inProject = projectUsers(w.h);
  const skipped = new Map<string, SkipReason>();
  for (const pair of allPairs(w.h)) {
    const [user = "", server = ""] = pair.split("|");
    if (!inProject.has(user)) {
      // An all-users config no longer lists a user who left: absent, not skipped.
      if (w.explicit) skipped.set(pair, "not_a_project_user");
    } else if (server === w.paused) skipped.set(pair, "not_syncable");
    else if (w.locked.has(pair)) skipped.set(pair, "not_accessible");
  }
  if (full || w.first) return { full: true, allowMassDelete, since: null, skipped };
  const models = [...w.pairs.values()];
  const newest = Math.max(...models.map((p) => p.watermark));
  const active = models.filter((p) => !p.retired && !p.leftSkip && newest - p.watermark <= GRACE_MS);
  if (active.length === 0) return { full: true, allowMassDelete, since: null, skipped };
  const since = Math.min(...active.map((p) => p.watermark)) - OVERLAP_SECONDS * 1000;
  return { full: false, allowMassDelete, since, skipped };
}

async function runPass(w: Walk, label: string, asked: { full: boolean; allowMassDelete: boolean }) {
  const plan = planPass(w, asked.full, asked.allowMassDelete);
  const failed = !w.first && w.rng.chance(0.15) ? failRunnablePair(w, plan) : undefined;
  const mode = `${plan.full ? "full" : "incremental"}${plan.allowMassDelete ? " --allow-mass-delete" : ""}`;
  const ctx = `${label} ${mode}${failed ? ` (${failed.how}: ${failed.pair})` : ""}`;
  const before = w.first ? emptyMirror() : mirrorState(w.h);
  const summary = await w.h.sync({ full: asked.full, allowMassDelete: asked.allowMassDelete });
  w.h.sim.clearOutcomes();
  const after = mirrorState(w.h);
  const truth = upstreamTruth(w.h);
  const exported = await passExport(w.h, summary.trigger_id);
  expect(databaseProblems(w.h), ctx).toEqual([]);
  expect(summary.mode, ctx).toBe(plan.full ? "full" : "incremental");
  expect(summary.since === null ? null : Date.parse(summary.since), `${ctx}: since`).toBe(plan.since);
  const skippedCounts: Record<string, number> = {};
  for (const reason of plan.skipped.values()) skippedCounts[reason] = (skippedCounts[reason] ?? 0) + 1;
  expect(summary.skipped, `${ctx}: skipped pairs by reason`).toEqual(skippedCounts);

  const runs = w.h.sim.runs.list().filter((r) => r.trigger_id === summary.trigger_id);
  const ran = new Set(runs.flatMap((r) => r.sources.map((s) => `${r.user_email}|${s.server_instance_id}`)));
  if (failed) expect(ran.has(failed.pair) && !exported.succeeded.has(failed.pair), ctx).toBe(true);
  const snapshotAt = Math.max(...runs.map((r) => Date.parse(r.created_at)));
  const model = plan.full
    ? expectFull(w, plan, { before, truth, exported, snapshotAt })
    : { access: new Set([...before.access, ...exported.seen]), held: new Map<string, AccessId[]>() };
  // Each held pair's sweep counts its access rows; held_revocations their keys, each once.
  const heldTotal = new Set([...model.held.values()].flat().map(keyOf)).size;

  expect(sorted(after.access), `${ctx}: resource_access`).toEqual(sorted(model.access));
  checkRows({ ctx, before, after, exported }, w.everLive);
  expect(summary.outcome, `${ctx}: outcome (held: ${[...model.held.keys()]})`).toBe(
    failed || heldTotal > 0 ? "partial" : "succeeded",
  );
  if (plan.full) {
    expect(summary.counts, `${ctx}: the sweep's counts`).toMatchObject({
      sweeps_held: model.held.size,
      held_revocations: heldTotal,
      access_revoked: difference(before.access, after.access).length,
    });
    w.heldRevocations = heldTotal;
  } else expect(difference(before.live, after.live), `${ctx}: keys deleted by an incremental`).toEqual([]);
  expect(w.h.query("SELECT held_revocations FROM mirror_state"), `${ctx}: held_revocations`).toEqual([
    { held_revocations: w.heldRevocations },
  ]);
  const gauge = (await w.h.metrics.heldRevocations.get()).values.find((v) => v.labels.mirror === "main");
  expect(gauge?.value, `${ctx}: syncmirror_held_revocations`).toBe(w.heldRevocations);

  checkEdited(
    w.h,
    { ctx, truth, exported, after, failed: failed !== undefined, since: plan.since },
    w.edited,
  );
  checkFeed({ ctx, before, after, feed: changesAfter(w.h, before.lastSeq) }, w.consumerLive);
  settleModel(w, plan, { ran, exported, snapshotAt });
  for (const key of after.live) w.everLive.add(key);
  w.first = false;
}

interface FullFacts {
  before: MirrorState;
  truth: Truth;
  exported: PassExport;
  snapshotAt: number;
}

/**
 * A full pass, pair by pair: a user who left loses everything (not held); a pair skipped out of
 * reach keeps what it held within its grace and loses it after (not held); a source that did not
 * succeed keeps what it held and gains what arrived; one that succeeded holds exactly the truth,
 * unless its sweep would revoke more than the fraction and more than 10 keys without
 * `--allow-mass-delete`: then it is held, and nothing of that pair is revoked.
 */
function expectFull(
  w: Walk,
  plan: PassPlan,
  f: FullFacts,
): { access: Set<AccessId>; held: Map<string, AccessId[]> } {
  const inProject = f.truth.projectUsers;
  const byPair = (ids: Iterable<AccessId>) => {
    const out = new Map<string, Set<AccessId>>();
    for (const id of ids) {
      const pair = pairOf(id);
      out.set(pair, (out.get(pair) ?? new Set()).add(id));
    }
    return out;
  };
  const [held, seen, truth] = [byPair(f.before.access), byPair(f.exported.seen), byPair(f.truth.access)];
  const newest = Math.max(f.snapshotAt, ...[...w.pairs.values()].map((p) => p.watermark));
  const access = new Set<AccessId>();
  const heldSweeps = new Map<string, AccessId[]>();
  for (const pair of allPairs(w.h)) {
    const before = held.get(pair) ?? new Set<AccessId>();
    const arrived = seen.get(pair) ?? new Set<AccessId>();
    const user = pair.split("|")[0] ?? "";
    const reason = plan.skipped.get(pair);
    let keep: Iterable<AccessId> = [];
    if (!inProject.has(user)) {
      if (before.size > 0) w.seen.lostForLeaving++;
    } else if (reason !== undefined) {
      const model = w.pairs.get(pair);
      const pastGrace = model !== undefined && newest - model.watermark > GRACE_MS;
      if (!pastGrace) keep = before;
      if (before.size > 0) w.seen[pastGrace ? "lostPastGrace" : "keptInGrace"]++;
    } else if (!f.exported.succeeded.has(pair)) {
      keep = new Set([...before, ...arrived]);
    } else {
      const revocable = [...before].filter((id) => !arrived.has(id));
      const total = new Set([...before, ...arrived]).size;
      const overGuard = revocable.length > Math.max(GUARD_MIN_KEYS, MAX_DELETE_FRACTION * total);
      if (overGuard && !plan.allowMassDelete) {
        heldSweeps.set(pair, revocable);
        keep = new Set([...before, ...arrived]);
        w.seen.held++;
      } else {
        if (overGuard) w.seen.allowedMassDelete++;
        else if (revocable.length > MAX_DELETE_FRACTION * total) w.seen.appliedFewKeys++;
        else if (revocable.length > GUARD_MIN_KEYS) w.seen.appliedUnderFraction++;
        keep = truth.get(pair) ?? [];
      }
    }
    for (const id of keep) access.add(id);
  }
  return { access, held: heldSweeps };
}

/** The pairs' watermarks, retirement and skips as the pass leaves them. */
function settleModel(
  w: Walk,
  plan: PassPlan,
  f: { ran: Set<string>; exported: PassExport; snapshotAt: number },
) {
  for (const pair of f.ran) {
    const model = w.pairs.get(pair);
    if (model) Object.assign(model, { retired: false, leftSkip: false });
  }
  for (const pair of f.exported.succeeded) {
    const model = w.pairs.get(pair);
    if (model) model.watermark = Math.max(model.watermark, f.snapshotAt);
    else w.pairs.set(pair, { watermark: f.snapshotAt, retired: false, leftSkip: false });
  }
  for (const [pair, reason] of plan.skipped) {
    const model = w.pairs.get(pair);
    if (model) model.leftSkip = reason === "not_a_project_user";
  }
  const inProject = projectUsers(w.h);
  const newest = Math.max(...[...w.pairs.values()].map((p) => p.watermark));
  for (const [pair, model] of w.pairs) {
    const user = pair.split("|")[0] ?? "";
    const reason = plan.skipped.get(pair);
    // An incremental retires only users absent from an all-users trigger; a full pass every leaver
    // and every pair skipped out of reach past its grace.
    if (!inProject.has(user) && (plan.full || !w.explicit)) model.retired = true;
    if (
      plan.full &&
      reason !== undefined &&
      reason !== "not_a_project_user" &&
      newest - model.watermark > GRACE_MS
    )
      model.retired = true;
  }
}

type ChangeKind =
  | DocumentChange
  | "leave"
  | "rejoin"
  | "lock"
  | "unlock"
  | "pause"
  | "unpause"
  | "clock"
  | "mass";

/** One random upstream change; returns what it did, for the assertion messages. */
function applyChange(w: Walk): string {
  const { h, rng } = w;
  const inProject = [...projectUsers(h)];
  const left = h.sim.users.filter((u) => !inProject.includes(u));
  const lockable = allPairs(h).filter((pair) => !w.locked.has(pair));
  const kind = rng.weighted<ChangeKind>([
    ["edit", 5],
    ["add", 2],
    ["remove", 2],
    ["grant", 3],
    ["revoke", 3],
    // Two users stay, one server at most is paused and three pairs at most are locked: some pair runs.
    ["leave", inProject.length > 2 ? 2 : 0],
    ["rejoin", left.length > 0 ? 2 : 0],
    ["lock", w.locked.size < MAX_LOCKED ? 3 : 0],
    ["unlock", w.locked.size > 0 ? 2 : 0],
    ["pause", w.paused === undefined ? 1 : 0],
    ["unpause", w.paused === undefined ? 0 : 2],
    ["clock", 3],
    ["mass", 4],
  ]);
  switch (kind) {
    case "leave":
    case "rejoin": {
      return moveUser(h, rng, kind, inProject, left);
    }
    case "lock": {
      const pair = rng.pick(lockable);
      const [user = "", server = ""] = pair.split("|");
      const status = rng.pick(LOCKED_STATUSES);
      h.sim.people.setAuth(user, server, status);
      w.locked.add(pair);
      return `lock ${pair} (${status})`;
    }
    case "unlock": {
      const pair = rng.pick([...w.locked]);
      const [user = "", server = ""] = pair.split("|");
      h.sim.people.setAuth(user, server, "authenticated");
      w.locked.delete(pair);
      return `unlock ${pair}`;
    }
    case "pause":
    case "unpause": {
      const server = w.paused ?? rng.pick(h.sim.servers).server_instance_id;
      h.sim.configs.setServerAvailable(w.configId, server, kind === "unpause");
      w.paused = kind === "pause" ? server : undefined;
      return `${kind} ${server}`;
    }
    case "clock": {
      const hours = rng.int(10, 80);
      h.sim.clock.advance(hours * 3_600_000 + rng.int(0, 3_600_000));
      return `clock +${hours}h`;
    }
    case "mass":
      return massChange(w);
    default:
      return changeDocument(h, rng, kind, w.edited);
  }
}

/**
 * Many of one pair's documents at once: granted to its user (every live one of its server); or
 * removed or hidden from its user, either more than half of a pair's (held above 10 keys, let
 * through at 10 or fewer) or, from the pair holding most, more than 10 but no more than half (let
 * through).
 */
function massChange(w: Walk): string {
  const { h, rng } = w;
  const inProject = projectUsers(h);
  const pairs = allPairs(h).filter((p) => inProject.has(p.split("|")[0] ?? ""));
  const docsOf = (pair: string) => {
    const [user = "", server = ""] = pair.split("|");
    return h.sim.docs
      .list()
      .filter((d) => !d.deleted && d.server_instance_id === server && d.visibleTo.includes(user));
  };
  const variant = rng.pick(["grant", "under", "most"] as const);
  if (variant === "grant") {
    const pair = rng.pick(pairs);
    const [user = "", server = ""] = pair.split("|");
    const onServer = h.sim.docs.list().filter((d) => !d.deleted && d.server_instance_id === server);
    for (const d of onServer) h.sim.docs.setVisibility(d.docId, [...new Set([...d.visibleTo, user])]);
    return `mass grant ${onServer.length} for ${pair}`;
  }
  const largest = pairs
    .map((pair) => ({ pair, n: docsOf(pair).length }))
    .reduce((a, b) => (b.n > a.n ? b : a));
  const under = variant === "under" && largest.n > 2 * (GUARD_MIN_KEYS + 1);
  const pair = under ? largest.pair : rng.pick(pairs);
  const docs = docsOf(pair);
  const count = under
    ? rng.int(GUARD_MIN_KEYS + 1, Math.floor(docs.length / 2) + 1)
    : rng.int(Math.floor(docs.length / 2) + 1, docs.length + 1);
  const chosen = docs
    .map((d) => ({ d, order: rng.next() }))
    .sort((a, b) => a.order - b.order)
    .slice(0, count)
    .map(({ d }) => d);
  const hide = rng.chance(0.5);
  const user = pair.split("|")[0] ?? "";
  for (const d of chosen)
    if (hide)
      h.sim.docs.setVisibility(
        d.docId,
        d.visibleTo.filter((u) => u !== user),
      );
    else h.sim.docs.remove(d.docId);
  return `mass ${hide ? "hide" : "remove"} ${chosen.length} of ${docs.length} for ${pair}`;
}

/** One pair that will run makes its source not succeed in this pass. */
function failRunnablePair(w: Walk, plan: PassPlan): { pair: string; how: string } | undefined {
  const inProject = projectUsers(w.h);
  const runnable = allPairs(w.h).filter(
    (pair) => inProject.has(pair.split("|")[0] ?? "") && !plan.skipped.has(pair),
  );
  if (runnable.length === 0) return undefined;
  const pair = w.rng.pick(runnable);
  return { pair, how: failSource(w.h, w.rng, pair) };
}
