/**
 * Two consumers of a daemon's `/v1/changes` (every mirror, and `mirror=other`), reading in small pages
 * from seq 0 and onward after each pass the daemon runs, keep exactly the live resources and
 * access lists of their view: through new keys, edits, a key that leaves one mirror but stays in
 * the other, a delete, a key back from its tombstone, and a pass that changes nothing. Search
 * follows the same passes, as each user and within each mirror.
 */
import { describe, expect, it } from "vitest";
import type { DocInfo } from "../../../src/simulator/index.js";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { lastSeq, pickDoc, pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, editConfig, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const [U1, U2] = ["user1@example.com", "user2@example.com"];
const PAGE = 4;

interface Change {
  seq: number;
  key: string;
  op: "upsert" | "access" | "delete";
  resource: {
    key: string;
    title: string | null;
    content_hash: string;
    content_text: string | null;
    deleted_at: string | null;
  };
  access: { mirror: string; user_email: string }[];
}

interface Doc {
  title: string | null;
  contentHash: string;
  users: string[];
}

/** A consumer's whole memory: the last seq it applied and its index. */
interface Consumer {
  mirror?: string;
  after: number;
  index: Record<string, Doc>;
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, shapes are asserted
async function call(d: DaemonProcess, path: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${d.port}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${HTTP_TOKEN}` },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Reads on from the consumer's seq to the end, `PAGE` at a time; returns the changes applied. */
async function catchUp(d: DaemonProcess, c: Consumer): Promise<Change[]> {
  const applied: Change[] = [];
  const scope = c.mirror === undefined ? "" : `&mirror=${c.mirror}`;
  for (;;) {
    const page = await call(d, `/v1/changes?after=${c.after}&limit=${PAGE}${scope}`);
    expect(page.changes.length).toBeLessThanOrEqual(PAGE);
    for (const change of page.changes as Change[]) {
      expect(change.seq, "no seq twice, none out of order").toBeGreaterThan(applied.at(-1)?.seq ?? c.after);
      const users = [...new Set(change.access.map((a) => a.user_email))].sort();
      if (change.resource.deleted_at !== null || users.length === 0) delete c.index[change.key];
      else
        c.index[change.key] = {
          title: change.resource.title,
          contentHash: change.resource.content_hash,
          users,
        };
      applied.push(change);
    }
    c.after = page.next_after;
    if (!page.has_more) return applied;
    expect(page.changes).toHaveLength(PAGE);
  }
}

/** What a consumer of `mirror` (or of every mirror) must hold: live keys it sees, with their users. */
function expectedView(h: Harness, mirror?: string): Record<string, Doc> {
  const rows = h.query<{ key: string; title: string | null; content_hash: string; user_email: string }>(
    `SELECT r.key, r.title, r.content_hash, a.user_email
     FROM resources r JOIN resource_access a ON a.key = r.key
     WHERE r.deleted_at IS NULL AND (? = '' OR a.mirror = ?)`,
    mirror ?? "",
    mirror ?? "",
  );
  const view: Record<string, Doc> = {};
  for (const r of rows) {
    const doc = view[r.key] ?? { title: r.title, contentHash: r.content_hash, users: [] };
    if (!doc.users.includes(r.user_email)) doc.users.push(r.user_email);
    view[r.key] = doc;
  }
  for (const doc of Object.values(view)) doc.users.sort();
  return view;
}

/** Asks the daemon for a pass of `mirror` and waits until its history shows it succeeded. */
async function pass(d: DaemonProcess, mirror: string, mode: "full" | "incremental"): Promise<void> {
  const newest = async () => (await call(d, `/v1/passes?mirror=${mirror}&limit=1`)).passes[0];
  const before = (await newest())?.id ?? 0;
  await call(d, `/v1/mirrors/${mirror}/trigger`, { method: "POST", body: JSON.stringify({ mode }) });
  const done = await until(async () => {
    const p = await newest();
    return p !== undefined && p.id > before && p.outcome !== null ? p : undefined;
  }, `the ${mode} pass of ${mirror}`);
  expect(done.outcome, JSON.stringify(done)).toBe("succeeded");
}

/** Words most generated documents hold: a search that finds more than a page. */
const BROAD = "the OR a OR of OR to OR and";

async function searchKeys(
  d: DaemonProcess,
  user: string,
  q: string,
  mirror?: string,
  limit = 100,
): Promise<string[]> {
  const scope = mirror === undefined ? "" : `&mirror=${mirror}`;
  const res = await call(d, `/v1/search?user=${user}&q=${encodeURIComponent(q)}&limit=${limit}${scope}`);
  return res.results.map((r: { key: string }) => r.key);
}

const phrase = (title: string) => `"${title.replace(/"/g, "")}"`;

describe("consumers of /v1/changes, whole and per mirror", () => {
  it("rebuild exactly their view's live keys and access lists through every kind of change", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 40 } }));
    configureConsumers(h, { search: true });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const notion = h.sim.servers.filter((s) => s.source_type === "notion").map((s) => s.server_instance_id);
    // `other` sees a subset of `main`: U1's notion documents.
    const second = h.sim.configs.create({ name: "u1 notion", serverIds: notion, userEmails: [U1] });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "other", sync_config_id: second });
    });
    const [edited, narrowed, removed] = pickDocs(
      h,
      3,
      (x) => notion.includes(x.server_instance_id) && x.visibleTo.includes(U1) && x.visibleTo.includes(U2),
    ) as [DocInfo, DocInfo, DocInfo];
    const d = await suite.daemon(h);
    const all: Consumer = { after: 0, index: {} };
    const other: Consumer = { mirror: "other", after: 0, index: {} };
    /** One pass, then both consumers read on: the newest change the pass recorded of each key. */
    const step = async (mirror: string, mode: "full" | "incremental") => {
      await pass(d, mirror, mode);
      const stage = `after the ${mode} pass of ${mirror}`;
      const changed = await catchUp(d, all);
      await catchUp(d, other);
      expect(all.index, stage).toEqual(expectedView(h));
      expect(other.index, stage).toEqual(expectedView(h, "other"));
      for (const view of [all, other])
        for (const user of [U1, U2]) {
          const visible = Object.keys(view.index).filter((key) => view.index[key]?.users.includes(user));
          const found = await searchKeys(d, user, BROAD, view.mirror);
          expect(found.length > 0, `${stage}: ${user} finds something`).toBe(visible.length > 0);
          expect(visible, `${stage}: ${user} finds only what they see`).toEqual(
            expect.arrayContaining(found),
          );
          expect(await searchKeys(d, user, BROAD, view.mirror, 2)).toEqual(found.slice(0, 2));
        }
      // The newest change of each key: one per run, and a pass has a run per user.
      return new Map(changed.map((c) => [c.key, c]));
    };

    expect((await step("main", "full")).size).toBeGreaterThan(PAGE);
    expect((await step("other", "full")).size).toBeGreaterThan(0);
    expect(Object.keys(other.index).length).toBeGreaterThan(PAGE);
    expect(Object.keys(other.index).every((key) => key.startsWith("notion:"))).toBe(true);

    h.sim.clock.advance(60_000);
    h.sim.docs.edit(edited.docId, { content: "edited for the feed" });
    const added = h.sim.docs.get(
      h.sim.docs.add({
        server_instance_id: notion[0] as string,
        visibleTo: [U1],
        title: "Added for the feed",
      }),
    ).key;
    const incremental = await step("main", "incremental");
    expect(incremental.get(edited.key)).toMatchObject({
      op: "upsert",
      resource: { content_text: "edited for the feed" },
    });
    expect(incremental.get(added)).toMatchObject({ op: "upsert" });
    expect(other.index[added], "main's new key is not other's").toBeUndefined();
    expect(other.index[edited.key]?.contentHash, "other's key, edited by main's pass").toBe(
      all.index[edited.key]?.contentHash,
    );

    // U1 loses `narrowed` (so `other` loses it, main keeps it for U2); nobody sees `removed` any more.
    h.sim.docs.setVisibility(narrowed.docId, [U2]);
    h.sim.docs.setVisibility(removed.docId, []);
    const mainFull = await step("main", "full");
    expect(mainFull.get(narrowed.key)?.op).toBe("access");
    expect(mainFull.get(removed.key), "other still sees it").toMatchObject({
      op: "access",
      access: [{ mirror: "other", user_email: U1 }],
    });
    const otherFull = await step("other", "full");
    expect(otherFull.get(narrowed.key)).toMatchObject({
      op: "access",
      access: [{ mirror: "main", user_email: U2 }],
    });
    expect(otherFull.get(removed.key)).toMatchObject({ op: "delete", access: [] });
    expect(other.index[narrowed.key]).toBeUndefined();
    expect(all.index[narrowed.key]?.users).toEqual([U2]);
    expect(await searchKeys(d, U1, phrase(narrowed.title))).not.toContain(narrowed.key);
    expect(await searchKeys(d, U2, phrase(narrowed.title), "main")).toContain(narrowed.key);
    expect(await searchKeys(d, U2, phrase(narrowed.title), "other")).not.toContain(narrowed.key);
    for (const user of [U1, U2])
      expect(await searchKeys(d, user, phrase(removed.title))).not.toContain(removed.key);

    // Back from its tombstone: the whole row again, not only an access list.
    h.sim.docs.setVisibility(removed.docId, [U1]);
    const back = await step("other", "full");
    expect(back.get(removed.key)).toMatchObject({
      op: "upsert",
      resource: { deleted_at: null, content_text: expect.any(String) },
      access: [{ mirror: "other", user_email: U1 }],
    });
    expect(other.index[removed.key]?.users).toEqual([U1]);
    expect(await searchKeys(d, U1, phrase(removed.title), "other")).toContain(removed.key);
    expect(await searchKeys(d, U1, phrase(removed.title), "main")).not.toContain(removed.key);
    expect((await step("main", "full")).get(removed.key)?.op).toBe("access");
    expect(await searchKeys(d, U1, phrase(removed.title), "main")).toContain(removed.key);

    const seq = lastSeq(h);
    expect((await step("main", "full")).size, "the same export again records nothing").toBe(0);
    expect((await step("other", "full")).size, "the same export again records nothing").toBe(0);
    expect(lastSeq(h)).toBe(seq);
    expect(all.after).toBe(seq);

    // A consumer starting over from 0 ends where the followers did.
    for (const mirror of [undefined, "other"]) {
      const fresh: Consumer = { mirror, after: 0, index: {} };
      await catchUp(d, fresh);
      expect(fresh.index).toEqual(expectedView(h, mirror));
    }
  });
});

describe("syncmirror reindex --mirror", () => {
  it("builds the index for a named mirror synced while search was off, and refuses a name not in the config", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 10 } }));
    configureConsumers(h, { search: false });
    await h.sync();
    configureConsumers(h, { search: true });

    const unknown = await h.cli(["reindex", "--mirror", "nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no mirror named "nope" in .* \(known: main\)/);

    const built = await h.cli(["reindex", "--mirror", "main"]);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stdout).toMatch(/^search index rebuilt: \d+ live resources/);
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    const found = await h.cli(["search", "--user", U1, "--mirror", "main", "--json", phrase(doc.title)]);
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout).results.map((r: { key: string }) => r.key)).toContain(doc.key);
  });
});
