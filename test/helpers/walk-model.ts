/**
 * The model behind the seeded random walk (test/integration/mirror/model-walk.test.ts): what the
 * simulator says is true upstream, what one pass exported, and the mirror's state as sets, so the
 * walk compares sets and never trusts the mirror for what it should hold.
 */
import type { ResourceRowView } from "./mirror-db.js";
import type { Harness } from "./mirror-harness.js";
import { createTestApi, exportAll } from "./simulator.js";

/** `user|key`: one access a reader joins on. */
export type AccessId = string;

export const accessId = (user: string, key: string): AccessId => `${user}|${key}`;

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
  return {
    next,
    chance: (p: number) => next() < p,
    int: (min: number, maxExclusive: number) => min + Math.floor(next() * (maxExclusive - min)),
    pick<T>(items: readonly T[]): T {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new RangeError("pick from an empty list");
      return item;
    },
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

export function upstreamTruth(h: Harness): Truth {
  const projectUsers = new Set(
    h.sim.people
      .list()
      .filter((p) => p.projectUser)
      .map((p) => p.email),
  );
  const access = new Set<AccessId>();
  const live = new Set<string>();
  for (const doc of h.sim.docs.list()) {
    if (doc.deleted) continue;
    for (const user of doc.visibleTo) {
      if (!projectUsers.has(user)) continue;
      access.add(accessId(user, doc.key));
      live.add(doc.key);
    }
  }
  return { projectUsers, access, live };
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
