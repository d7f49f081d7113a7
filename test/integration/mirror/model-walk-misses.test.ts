/**
 * docs/reference/sync-semantics.md (a key missed in `delete_after_missed_full` full snapshots in a
 * row loses that pair's access; users who left; a trigger whose response was lost), as a seeded
 * random walk: documents are hidden from a user and some brought back (edited, so an incremental
 * sees them again), edited, added and removed, users leave and rejoin, and now and then the
 * trigger's response is lost so its runs are adopted and the access check decides who left, that
 * check failing too on some passes. The guard is off (`max_delete_fraction` 1), except in a second
 * walk where many of a pair's documents are hidden at once, the guard holds the pair's sweep
 * (counting no misses) and `approve-sweep` lets the next full pass apply it. After every pass
 * (mostly full, some incremental) the mirror is compared with a model that counts each
 * (pair, key)'s misses itself. Every message names the seed and step.
 */
import { afterEach, describe, expect, it } from "vitest";
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
  mirrorState,
  moveUser,
  pairOf,
  passExport,
  projectUsers,
  seedsForStore,
  upstreamTruth,
  type WalkRandom,
  walkRandom,
} from "../../helpers/walk-model.js";

const SEEDS = [4, 9, 20, 24];
const STEPS = 20;
const GUARD_SEEDS = [1, 13];
const GUARD_FRACTION = 0.5;
/** The guard holds a sweep only above this many keys, whatever the fraction. */
const GUARD_MIN_KEYS = 10;

let h: Harness;
afterEach(async () => {
  await h?.close();
});

/** What the walk saw happen, so a seed that stops exercising a rule fails rather than passes. */
interface Seen {
  /** A full pass missed a key the pair kept, its count still below the threshold. */
  keptBelowThreshold: number;
  /** A key reached the threshold and lost the pair's access. */
  revokedAtThreshold: number;
  /** A key missed at least once was seen again in an incremental pass, resetting its count. */
  resetByIncremental: number;
  /** A key whose count a sighting reset was missed again: it counts from zero. */
  missedAfterReset: number;
  /** After a lost trigger response, the access check took a leaver's access. */
  adoptedLeaverLost: number;
  /** After a lost trigger response and a failed access check, a leaver kept its access. */
  adoptedLeaverKept: number;
  /** The mass-delete guard held a pair's sweep (guard on only). */
  held: number;
  /** A held sweep applied on an approval (guard on only). */
  appliedOnApproval: number;
}

interface Walk {
  h: Harness;
  rng: WalkRandom;
  threshold: number;
  /** `max_delete_fraction`: 1 turns the guard off. */
  fraction: number;
  /** Pairs whose sweep the guard holds now, with the revocations held. */
  held: Map<string, number>;
  /** An approve-sweep not yet taken by a full pass that swept the pair: the held pairs it covers. */
  approval: Map<string, number> | undefined;
  /** The access the mirror should hold, with each one's misses in full snapshots in a row. */
  misses: Map<AccessId, number>;
  /** Access whose misses a sighting reset, until missed again. */
  reset: Set<AccessId>;
  /** `docId|user`: documents the walk hid from a user, who may get them back. */
  hidden: Set<string>;
  /** `docId|user`: documents brought back, which may be hidden again. */
  returned: Set<string>;
  /** This step brought back a document and edited it. */
  broughtBack: boolean;
  everLive: Set<string>;
  edited: Set<string>;
  consumerLive: Set<string>;
  first: boolean;
  seen: Seen;
}

/** How the trigger's response reaches the mirror in this pass. */
type Trigger = "answered" | "lost" | "lost, access check failing";

describe("a seeded random walk of keys missed in full snapshots in a row", () => {
  it.each(seedsForStore(SEEDS))("keeps the mirror equal to the model (seed %i)", (seed) => walkSeed(seed, 1));
});

describe("the same walk with the mass-delete guard on, and approve-sweep", () => {
  it.each(seedsForStore(GUARD_SEEDS))("keeps the mirror equal to the model (seed %i)", (seed) =>
    walkSeed(seed, GUARD_FRACTION),
  );
});

async function walkSeed(seed: number, fraction: number): Promise<void> {
  const threshold = seed % 3 === 0 ? 3 : 2;
  const guard = fraction < 1;
  h = await createHarness({
    sim: { seed, docs: guard ? 120 : 40, users: 4, serversPerType: { notion: 1, github: 1, google_docs: 1 } },
    defaults: { delete_after_missed_full: threshold, max_delete_fraction: fraction },
  });
  const walk: Walk = {
    h,
    rng: walkRandom(seed),
    threshold,
    fraction,
    held: new Map(),
    approval: undefined,
    misses: new Map(),
    reset: new Set(),
    hidden: new Set(),
    broughtBack: false,
    returned: new Set(),
    everLive: new Set(),
    edited: new Set(),
    consumerLive: new Set(),
    first: true,
    seen: {
      keptBelowThreshold: 0,
      revokedAtThreshold: 0,
      resetByIncremental: 0,
      missedAfterReset: 0,
      adoptedLeaverLost: 0,
      adoptedLeaverKept: 0,
      held: 0,
      appliedOnApproval: 0,
    },
  };
  const label = (step: number) =>
    `seed ${seed} (threshold ${threshold}, max_delete_fraction ${fraction}) step ${step}`;
  await runPass(walk, `${label(0)} (first pass)`, { full: true, trigger: "answered" });
  for (let step = 1; step <= STEPS; step++) {
    const actions = Array.from({ length: walk.rng.int(1, 4) }, () => applyChange(walk));
    if (walk.held.size > 0 && walk.rng.chance(0.6)) actions.push(await approveSweep(walk));
    // A document brought back and edited: mostly an incremental, which sees it again.
    const full = walk.rng.chance(walk.broughtBack ? 0.3 : 0.7);
    walk.broughtBack = false;
    const inProject = projectUsers(h);
    const leaverHolds = [...walk.misses.keys()].some((id) => !inProject.has(id.split("|")[0] ?? ""));
    const trigger: Trigger =
      full && walk.rng.chance(leaverHolds ? 0.7 : 0.1)
        ? walk.rng.pick(["lost", "lost, access check failing"] as const)
        : "answered";
    await runPass(walk, `${label(step)} [${actions.join(", ")}]`, { full, trigger });
  }
  const unexercised = guard ? [] : ["held", "appliedOnApproval"];
  for (const [what, n] of Object.entries(walk.seen))
    if (!unexercised.includes(what))
      expect(n, `seed ${seed}: how often the walk saw ${what}`).toBeGreaterThan(0);
}

/** `approve-sweep` through the CLI: the held sweeps, each up to what it held, for the next full pass. */
async function approveSweep(w: Walk): Promise<string> {
  const r = await w.h.cli(["approve-sweep", "--mirror", "main", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  const heldTotal = [...w.held.values()].reduce((n, k) => n + k, 0);
  expect(JSON.parse(r.stdout), "approve-sweep").toMatchObject({ pairs: w.held.size, up_to: heldTotal });
  w.approval = new Map(w.held);
  return `approve-sweep (${w.held.size} pair(s), up to ${heldTotal})`;
}

async function runPass(w: Walk, label: string, asked: { full: boolean; trigger: Trigger }): Promise<void> {
  const { h } = w;
  const inProject = projectUsers(h);
  const failed = !w.first && w.rng.chance(0.12) ? failOnePair(w, inProject) : undefined;
  if (asked.trigger !== "answered") h.sim.faults.inject("POST /sync-task", { kind: "drop-after" });
  if (asked.trigger === "lost, access check failing")
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "503",
      retryAfterSeconds: 0,
      times: Infinity,
    });
  const mode = asked.full ? "full" : "incremental";
  const ctx = `${label} ${mode}${asked.trigger === "answered" ? "" : ` (trigger response ${asked.trigger})`}${failed ? ` (${failed.how}: ${failed.pair})` : ""}`;
  const before = w.first ? emptyMirror() : mirrorState(h);
  const knownRuns = new Set(h.sim.runs.list().map((r) => r.sync_id));
  const summary = await h.sync({ full: asked.full });
  h.sim.clearOutcomes();
  h.sim.faults.clear();
  const after = mirrorState(h);
  const truth = upstreamTruth(h);
  // An adopted trigger's id is the one upstream gave its runs: read it from the runs it started.
  const runs = h.sim.runs.list().filter((r) => !knownRuns.has(r.sync_id));
  const exported = await passExport(h, runs[0]?.trigger_id ?? null);
  expect(databaseProblems(h), ctx).toEqual([]);
  expect(summary.mode, ctx).toBe(mode);
  expect(summary.adopted, `${ctx}: runs adopted`).toBe(asked.trigger !== "answered");
  if (failed) expect(exported.succeeded.has(failed.pair), `${ctx}: the failure was not applied`).toBe(false);

  const checkFailed = asked.trigger === "lost, access check failing";
  const {
    access: expected,
    held,
    heldKeys,
  } = settleModel(w, {
    full: asked.full,
    trigger: asked.trigger,
    inProject,
    exported,
  });
  const withMisses = (ids: AccessId[]) => ids.map((id) => `${id} (misses: ${w.misses.get(id) ?? "revoked"})`);
  expect(withMisses(difference(expected, after.access)), `${ctx}: access the mirror lost`).toEqual([]);
  expect(withMisses(difference(after.access, expected)), `${ctx}: access the mirror kept`).toEqual([]);
  expect(summary.outcome, `${ctx}: outcome (held: ${[...held.keys()]})`).toBe(
    failed || checkFailed || held.size > 0 ? "partial" : "succeeded",
  );
  expect(summary.counts, `${ctx}: held sweeps`).toMatchObject({
    sweeps_held: held.size,
    held_revocations: heldKeys,
  });
  if (!asked.full) {
    expect(difference(before.access, after.access), `${ctx}: access revoked by an incremental`).toEqual([]);
  }
  checkRows({ ctx, before, after, exported }, w.everLive);
  checkEdited(h, { ctx, truth, exported, after, failed: failed !== undefined, since: null }, w.edited);
  checkFeed({ ctx, before, after, feed: changesAfter(h, before.lastSeq) }, w.consumerLive);
  for (const key of after.live) w.everLive.add(key);
  w.first = false;
}

/** One (project user, server) source does not succeed in the next pass: which pair, and how. */
function failOnePair(w: Walk, inProject: Set<string>): { pair: string; how: string } {
  const pair = `${w.rng.pick([...inProject])}|${w.rng.pick(w.h.sim.servers).server_instance_id}`;
  return { pair, how: failSource(w.h, w.rng, pair) };
}

/**
 * The model after one pass, from what it exported: every sighting (any source, succeeded or not,
 * incremental or full) holds the access and resets its count. A full pass then takes all of a
 * leaver's access (unless the trigger's response was lost and the access check failed), and for
 * each pair whose source succeeded counts one miss for each key it holds and did not see, revoking
 * those that reach the threshold. Returns the access the mirror should hold.
 */
function settleModel(
  w: Walk,
  p: {
    full: boolean;
    trigger: Trigger;
    inProject: Set<string>;
    exported: { seen: Set<AccessId>; succeeded: Set<string> };
  },
): { access: Set<AccessId>; held: Map<string, number>; heldKeys: number } {
  const { misses } = w;
  const held = new Map<string, number>();
  // Each held pair counts its access rows (what approve-sweep covers); held_revocations counts
  // their keys, each once however many users would lose it.
  const heldKeys = new Set<string>();
  for (const id of p.exported.seen) {
    const n = misses.get(id) ?? 0;
    if (n > 0) w.reset.add(id);
    if (n > 0 && !p.full) w.seen.resetByIncremental++;
    misses.set(id, 0);
  }
  if (p.full) {
    const leavers = new Set([...misses.keys()].filter((id) => !p.inProject.has(id.split("|")[0] ?? "")));
    if (leavers.size > 0 && p.trigger === "lost, access check failing") w.seen.adoptedLeaverKept++;
    else {
      if (leavers.size > 0 && p.trigger === "lost") w.seen.adoptedLeaverLost++;
      for (const id of leavers) {
        misses.delete(id);
        w.held.delete(pairOf(id));
      }
    }
    const approval = w.approval;
    for (const pair of p.exported.succeeded) {
      const ids = [...misses.keys()].filter((id) => pairOf(id) === pair);
      const missed = ids.filter((id) => !p.exported.seen.has(id));
      const revocableIds = missed.filter((id) => (misses.get(id) ?? 0) + 1 >= w.threshold);
      const revocable = revocableIds.length;
      const allowance = Math.max(GUARD_MIN_KEYS, w.fraction * ids.length);
      const approved = approval?.get(pair);
      const onApproval = revocable > allowance && approved !== undefined && revocable <= approved + allowance;
      // A held sweep is not applied: nothing revoked, no miss counted.
      if (revocable > allowance && !onApproval) {
        held.set(pair, revocable);
        for (const id of revocableIds) heldKeys.add(keyOf(id));
        w.seen.held++;
        continue;
      }
      if (onApproval) w.seen.appliedOnApproval++;
      w.held.delete(pair);
      for (const id of missed) countMiss(w, id);
    }
    for (const [pair, n] of held) w.held.set(pair, n);
    // A pair this pass did not sweep keeps its approval for the next, while its sweep stays held.
    w.approval =
      approval &&
      new Map([...approval].filter(([pair]) => !p.exported.succeeded.has(pair) && w.held.has(pair)));
  }
  return { access: new Set(misses.keys()), held, heldKeys: heldKeys.size };
}

/** One more miss of a key its pair did not see; revoked at the threshold. */
function countMiss(w: Walk, id: AccessId): void {
  const n = w.misses.get(id) ?? 0;
  if (w.reset.delete(id)) w.seen.missedAfterReset++;
  if (n + 1 >= w.threshold) {
    w.misses.delete(id);
    w.seen.revokedAtThreshold++;
  } else {
    w.misses.set(id, n + 1);
    w.seen.keptBelowThreshold++;
  }
}

type ChangeKind = DocumentChange | "hide" | "unhide" | "rehide" | "mass hide" | "leave" | "rejoin";

/** One random upstream change; returns what it did, for the assertion messages. */
function applyChange(w: Walk): string {
  const { h, rng } = w;
  const inProject = [...projectUsers(h)];
  const left = h.sim.users.filter((u) => !inProject.includes(u));
  const rehidable = [...w.returned].filter((entry) => {
    const [docId = "", user = ""] = entry.split("|");
    const doc = h.sim.docs.get(docId);
    return !doc.deleted && inProject.includes(user) && doc.visibleTo.includes(user);
  });
  const kind = rng.weighted<ChangeKind>([
    ["edit", 3],
    ["add", 2],
    ["remove", 2],
    ["grant", 1],
    ["revoke", 1],
    ["hide", 5],
    ["unhide", w.hidden.size > 0 ? 5 : 0],
    ["rehide", rehidable.length > 0 ? 4 : 0],
    // Two users stay, so a trigger always has someone to run as.
    ["mass hide", w.fraction < 1 ? 2 : 0],
    ["leave", inProject.length > 2 ? 2 : 0],
    ["rejoin", left.length > 0 ? 1 : 0],
  ]);
  switch (kind) {
    case "leave":
    case "rejoin": {
      return moveUser(h, rng, kind, inProject, left);
    }
    case "hide": {
      const user = rng.pick(inProject);
      const docs = h.sim.docs.list().filter((d) => !d.deleted && d.visibleTo.includes(user));
      const chosen = new Set(
        Array.from({ length: Math.min(docs.length, rng.int(1, 4)) }, () => rng.pick(docs).docId),
      );
      for (const docId of chosen) hide(w, docId, user);
      return `hide [${[...chosen]}] from ${user}`;
    }
    case "mass hide":
      return massHide(w, inProject);
    case "rehide": {
      const entry = rng.pick(rehidable);
      const [docId = "", user = ""] = entry.split("|");
      hide(w, docId, user);
      return `hide ${docId} from ${user} again`;
    }
    case "unhide": {
      // Mostly one the mirror still holds with a miss counted, so a sighting has a count to reset.
      const missed = [...w.hidden].filter((entry) => {
        const [docId = "", user = ""] = entry.split("|");
        return (w.misses.get(`${user}|${h.sim.docs.get(docId).key}`) ?? 0) > 0;
      });
      const hidden = rng.pick(missed.length > 0 && rng.chance(0.7) ? missed : [...w.hidden]);
      w.hidden.delete(hidden);
      const [docId = "", user = ""] = hidden.split("|");
      const doc = h.sim.docs.get(docId);
      if (doc.deleted) return `unhide ${docId} for ${user} (deleted)`;
      h.sim.docs.setVisibility(docId, [...new Set([...doc.visibleTo, user])]);
      w.returned.add(hidden);
      // Edited, so an incremental exports it again: a sighting that resets the count.
      const edit = rng.chance(0.7);
      if (edit) {
        h.sim.docs.edit(docId);
        w.edited.add(doc.key);
        w.broughtBack = true;
      }
      return `unhide ${docId} for ${user}${edit ? " (edited)" : ""}`;
    }
    default:
      return changeDocument(h, rng, kind, w.edited);
  }
}

function hide(w: Walk, docId: string, user: string): void {
  const doc = w.h.sim.docs.get(docId);
  w.h.sim.docs.setVisibility(
    docId,
    doc.visibleTo.filter((u) => u !== user),
  );
  w.hidden.add(`${docId}|${user}`);
  w.returned.delete(`${docId}|${user}`);
}

/**
 * More than half of one pair's documents, and more than the guard's 10, hidden from its user: once
 * they reach the threshold the guard holds that pair's sweep.
 */
function massHide(w: Walk, inProject: string[]): string {
  const { h, rng } = w;
  const docsOf = (user: string, server: string) =>
    h.sim.docs
      .list()
      .filter((d) => !d.deleted && d.server_instance_id === server && d.visibleTo.includes(user));
  const pairs = inProject.flatMap((user) =>
    h.sim.servers
      .map((s) => ({ user, docs: docsOf(user, s.server_instance_id) }))
      .filter((p) => p.docs.length > GUARD_MIN_KEYS + 1),
  );
  if (pairs.length === 0) return "mass hide (no pair large enough)";
  const { user, docs } = rng.pick(pairs);
  const count = rng.int(Math.max(GUARD_MIN_KEYS + 1, Math.floor(docs.length / 2) + 1), docs.length + 1);
  const chosen = docs
    .map((d) => ({ d, order: rng.next() }))
    .sort((a, b) => a.order - b.order)
    .slice(0, count);
  for (const { d } of chosen) hide(w, d.docId, user);
  return `mass hide ${count} of ${docs.length} ${docs[0]?.server_instance_id} documents from ${user}`;
}
