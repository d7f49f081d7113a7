/**
 * The model behind the seeded random walk (test/integration/mirror/model-walk.test.ts): what the
 * simulator says is true upstream, what one pass exported, and the mirror's state as sets, so the
 * walk compares sets and never trusts the mirror for what it should hold.
 */
import { expect } from "vitest";
import type { Outcome } from "../../src/simulator/index.js";
import { onPostgres } from "./dialect.js";
import { type ResourceRowView, TOMBSTONE } from "./mirror-db.js";
import type { Harness } from "./mirror-harness.js";
import { createTestApi, exportAll } from "./simulator.js";

/** `user|key`: one access a reader joins on. */
export type AccessId = string;

export const accessId = (user: string, key: string): AccessId => `${user}|${key}`;

/**
 * The seeds a walk that checks its own coverage runs: every one on SQLite, the first on PostgreSQL.
 * Such a walk fails a seed that stops exercising any of its rules, so one seed still runs each rule
 * through PostgreSQL's SQL; the other seeds add orders of events, which the sync code decides the
 * same way on both stores. The other seeds took about 100 s of worker time on PostgreSQL.
 */
export const seedsForStore = (seeds: readonly number[]): readonly number[] =>
  onPostgres ? seeds.slice(0, 1) : seeds;

/** A tiny seeded PRNG (mulberry32): the walk replays exactly from its seed. */
export function walkRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => {
    const item = items[Math.floor(next() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty list");
    return item;
  };
  return {
    next,
    chance: (p: number) => next() < p,
    int: (min: number, maxExclusive: number) => min + Math.floor(next() * (maxExclusive - min)),
    pick,
    /**
     * One of `weights`' kinds, each as likely as its weight (0: never). One draw, as `pick` over
     * the kinds each written out weight times in this order, so a walk's seeds keep their steps.
     */
    weighted: <K>(weights: readonly (readonly [K, number])[]): K =>
      pick(weights.flatMap(([kind, n]) => Array<K>(n).fill(kind))),
  };
}
export type WalkRandom = ReturnType<typeof walkRandom>;

/** Upstream truth now: who is in the project, and who may see which live document. */
export interface Truth {
  projectUsers: Set<string>;
  access: Set<AccessId>;
  /** Keys some project user may see. */
  live: Set<string>;
}

/** The users in the project now. */
export function projectUsers(h: Harness): Set<string> {
  return new Set(
    h.sim.people
      .list()
      .filter((p) => p.projectUser)
      .map((p) => p.email),
  );
}

/** A user of `inProject` leaves the project, or one of `left` rejoins it; says which, for the messages. */
export function moveUser(
  h: Harness,
  rng: WalkRandom,
  kind: "leave" | "rejoin",
  inProject: readonly string[],
  left: readonly string[],
): string {
  const user = rng.pick(kind === "leave" ? inProject : left);
  if (kind === "leave") h.sim.people.leaveProject(user);
  else h.sim.people.joinProject(user);
  return `${kind} ${user}`;
}

export function upstreamTruth(h: Harness): Truth {
  const inProject = projectUsers(h);
  const access = new Set<AccessId>();
  const live = new Set<string>();
  for (const doc of h.sim.docs.list()) {
    if (doc.deleted) continue;
    for (const user of doc.visibleTo) {
      if (!inProject.has(user)) continue;
      access.add(accessId(user, doc.key));
      live.add(doc.key);
    }
  }
  return { projectUsers: inProject, access, live };
}

/** What one trigger's runs exported, as the service serves it, and which sources succeeded. */
export interface PassExport {
  /**
   * `user|server_instance_id` of every source that succeeded: task COMPLETED, export status `ok`
   * or `no_results`.
   */
  succeeded: Set<string>;
  /** key -> content_hash as exported. */
  hashes: Map<string, string>;
  /** Every (user, key) any source exported, succeeded or not: what arrived is upserted. */
  seen: Set<AccessId>;
}

interface ExportPage {
  sources: { server_instance_id: string; task_status: string; status: string }[];
  resources: { key: string; content_hash: string }[];
}

export async function passExport(h: Harness, triggerId: string | null): Promise<PassExport> {
  const api = createTestApi(h.sim);
  const out: PassExport = { succeeded: new Set(), hashes: new Map(), seen: new Set() };
  for (const run of h.sim.runs.list().filter((r) => r.trigger_id === triggerId)) {
    const pages: ExportPage[] = await exportAll(api, run.sync_id, { limit: 500 });
    for (const s of pages[0]?.sources ?? [])
      if (s.task_status === "COMPLETED" && ["ok", "no_results"].includes(s.status))
        out.succeeded.add(`${run.user_email}|${s.server_instance_id}`);
    for (const r of pages.flatMap((page) => page.resources)) {
      out.hashes.set(r.key, r.content_hash);
      out.seen.add(accessId(run.user_email, r.key));
    }
  }
  return out;
}

/** The mirror's public tables as sets: rows by key, access ids, live keys. */
export interface MirrorState {
  rows: Map<string, ResourceRowView>;
  access: Set<AccessId>;
  /** server_instance_id of each access id. */
  accessServer: Map<AccessId, string>;
  live: Set<string>;
  lastSeq: number;
}

export function mirrorState(h: Harness): MirrorState {
  const rows = new Map(
    h
      .query<ResourceRowView>(
        `SELECT key, content_hash, deleted_at, content_text, fields, metadata, relations, attachments, provenance
         FROM resources`,
      )
      .map((r) => [r.key, r]),
  );
  const accessServer = new Map(
    h
      .query<{ user_email: string; key: string; server_instance_id: string }>(
        "SELECT user_email, key, server_instance_id FROM resource_access WHERE mirror = 'main'",
      )
      .map((a) => [accessId(a.user_email, a.key), a.server_instance_id]),
  );
  const live = new Set([...rows.values()].filter((r) => r.deleted_at === null).map((r) => r.key));
  const [seq] = h.query<{ n: number | null }>("SELECT max(seq) AS n FROM changes");
  return { rows, access: new Set(accessServer.keys()), accessServer, live, lastSeq: seq?.n ?? 0 };
}

/** Before the first pass: no database yet. */
export function emptyMirror(): MirrorState {
  return { rows: new Map(), access: new Set(), accessServer: new Map(), live: new Set(), lastSeq: 0 };
}

export interface ChangeWithRun {
  seq: number;
  key: string;
  op: "upsert" | "delete" | "access";
  sync_id: string | null;
}

export function changesAfter(h: Harness, seq: number): ChangeWithRun[] {
  return h.query<ChangeWithRun>("SELECT seq, key, op, sync_id FROM changes WHERE seq > ? ORDER BY seq", seq);
}

export const sorted = <T>(items: Iterable<T>): T[] => [...items].sort();

export function difference<T>(a: Iterable<T>, b: ReadonlySet<T>): T[] {
  return sorted([...a].filter((x) => !b.has(x)));
}

/** The access ids holding `key`, sorted: what "who may see it" means for the feed. */
export function holdersOf(access: ReadonlySet<AccessId>, key: string): string[] {
  return sorted([...access].filter((a) => a.endsWith(`|${key}`)));
}

export const serverOfKey = (key: string) => key.split(":")[1] ?? "";

/** `user|server_instance_id`: the pair an access id belongs to. */
export const keyOf = (id: AccessId) => id.split("|")[1] ?? "";

export const pairOf = (id: AccessId) => `${id.split("|")[0] ?? ""}|${serverOfKey(keyOf(id))}`;

/**
 * A pass's resources rows: live keys are exactly the keys someone may see; a live key holds what
 * this pass exported, or else what it held; every other key the mirror ever held live is a tombstone.
 */
export function checkRows(
  p: { ctx: string; before: MirrorState; after: MirrorState; exported: PassExport },
  everLive: ReadonlySet<string>,
): void {
  const { ctx, before, after, exported } = p;
  const liveWithAccess = new Set([...after.access].map((id) => id.split("|")[1] ?? ""));
  expect(sorted(after.live), `${ctx}: live keys are the keys someone may see`).toEqual(
    sorted(liveWithAccess),
  );
  for (const key of new Set([...everLive, ...after.rows.keys()])) {
    if (after.live.has(key)) {
      const hash = exported.hashes.get(key) ?? before.rows.get(key)?.content_hash;
      expect(after.rows.get(key)?.content_hash, `${ctx}: content_hash of ${key}`).toBe(hash);
    } else expect(after.rows.get(key), `${ctx}: ${key} is a tombstone`).toMatchObject(TOMBSTONE);
  }
}

/** One pass's mirror before and after, and the changes it recorded. */
export interface FeedPass {
  ctx: string;
  before: MirrorState;
  after: MirrorState;
  feed: ChangeWithRun[];
}

/**
 * The per-run feed rules, then a consumer replaying it in order: `consumerLive` is what that
 * consumer holds live, carried from pass to pass.
 */
export function checkFeed(p: FeedPass, consumerLive: Set<string>): void {
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
  for (const c of feed) {
    if (c.op === "upsert") consumerLive.add(c.key);
    else {
      const known = consumerLive.has(c.key);
      expect(known, `${ctx}: ${c.op} #${c.seq} of a key the feed never made live`).toBe(true);
      if (c.op === "delete") consumerLive.delete(c.key);
    }
  }
  expect(sorted(consumerLive), `${ctx}: a consumer replaying the feed`).toEqual(sorted(after.live));
}

/** Ways a source does not succeed (the task, or the export status of a task that completed). */
export const SOURCE_FAILURES: Outcome[] = [
  { task: "FAILED" },
  { task: "INCOMPLETE", includeFraction: 0.5 },
  { task: "COMPLETED", exportStatus: "degraded" },
  { task: "COMPLETED", exportStatus: "authentication_required" },
];

/** Makes the pair's source not succeed in the next pass, one of SOURCE_FAILURES picked; returns how. */
export function failSource(h: Harness, rng: WalkRandom, pair: string): string {
  const [user, server] = pair.split("|");
  const outcome = rng.pick(SOURCE_FAILURES);
  h.sim.setOutcome({ user, server_instance_id: server }, { ...outcome, times: 1 });
  return outcome.exportStatus ?? outcome.task;
}

export type DocumentChange = "edit" | "add" | "remove" | "grant" | "revoke";

/**
 * One random change to one document upstream; keys edited or added join `edited`. Returns what it
 * did, for the assertion messages.
 */
export function changeDocument(
  h: Harness,
  rng: WalkRandom,
  kind: DocumentChange,
  edited: Set<string>,
): string {
  if (kind === "add") {
    const visibleTo = h.sim.users.filter(() => rng.chance(0.4));
    const server = rng.pick(h.sim.servers).server_instance_id;
    const docId = h.sim.docs.add({ server_instance_id: server, visibleTo });
    edited.add(h.sim.docs.get(docId).key);
    return `add ${docId} for [${visibleTo}]`;
  }
  const doc = rng.pick(h.sim.docs.list().filter((d) => !d.deleted));
  if (kind === "edit") {
    h.sim.docs.edit(doc.docId);
    edited.add(doc.key);
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

/** One pass, as the edited documents are checked against it. */
export interface EditedPass {
  ctx: string;
  truth: Truth;
  exported: PassExport;
  after: MirrorState;
  /** A source failed in this pass: what it missed stays to be checked in the next. */
  failed: boolean;
  /** The pass's since (ms): a document modified before it is not exported; null for a full snapshot. */
  since: number | null;
}

/**
 * Every document of `edited` (edited or added since the last pass without a failed source) that is
 * live, visible to a pair whose source succeeded in this pass and modified no earlier than its
 * since, was exported and holds the new content_hash. Leaves in `edited` what a failed source may
 * still owe.
 */
export function checkEdited(h: Harness, p: EditedPass, edited: Set<string>): void {
  const docs = new Map(h.sim.docs.list().map((d) => [d.key, d]));
  for (const key of edited) {
    const doc = docs.get(key);
    if (!doc || doc.deleted) continue;
    const reachable = doc.visibleTo.some(
      (u) => p.truth.projectUsers.has(u) && p.exported.succeeded.has(`${u}|${serverOfKey(key)}`),
    );
    const modifiedMs = doc.modifiedAt === null ? null : Date.parse(doc.modifiedAt);
    const inWindow = p.since === null || (modifiedMs !== null && modifiedMs >= p.since);
    if (!reachable || !inWindow) continue;
    const hash = p.exported.hashes.get(key);
    expect(
      hash,
      `${p.ctx}: ${doc.docId} (${key}) edited since the last good pass was not exported`,
    ).toBeDefined();
    expect(p.after.rows.get(key)?.content_hash, `${p.ctx}: content_hash of edited ${key}`).toBe(hash);
    expect(p.after.live.has(key), `${p.ctx}: edited ${key} is live`).toBe(true);
    edited.delete(key);
  }
  if (!p.failed) edited.clear();
}
