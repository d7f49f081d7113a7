/**
 * ACL-aware search on the real database (SQLite file or PostgreSQL, TEST_DIALECT): a user finds
 * only live resources they can see, and the index follows every page transaction (edits, sweeps,
 * leavers, deletes). SQLite alone keeps a separate FTS5 index whose consistency is checked too
 * (PostgreSQL's is a generated column of the row itself).
 */
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { SearchQueryError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import { openStore } from "../../../src/store/open-store.js";
import {
  configureConsumers,
  ftsIntegrity,
  indexedAndLiveKeys,
  searchIndexObjects,
  searchKeys,
} from "../../helpers/consumers.js";
import { until } from "../../helpers/daemon.js";
import { integrityOf } from "../../helpers/db-snapshot.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});
beforeAll(buildOnce);

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];
const onSqlite = TEST_DIALECT === "sqlite";

/** SQLite: the FTS5 index holds exactly the live keys, and FTS5's own check passes. */
function expectFtsConsistent(): void {
  if (!onSqlite) return;
  const { indexed, live } = indexedAndLiveKeys(h);
  expect(indexed).toEqual(live);
  expect(ftsIntegrity(h)).toBe("ok");
}

const openSearchStore = () =>
  openStore(loadConfig(h.configPath, h.env), { lock: false, log: silentLogger() });

async function searchHarness(docs = 20): Promise<Harness> {
  h = await createHarness({ sim: { docs } });
  configureConsumers(h, { search: true });
  return h;
}

function addDoc(harness: Harness, title: string, content: string, visibleTo: string[]): string {
  const server = harness.sim.servers.find((s) => s.source_type === "notion");
  if (!server) throw new Error("no notion server");
  const docId = harness.sim.docs.add({
    server_instance_id: server.server_instance_id,
    visibleTo,
    title,
    content,
  });
  return harness.sim.docs.get(docId).key;
}

describe("search shows each user only what they may see", () => {
  it("gives two users different results over shared and private documents, and nothing to a stranger", async () => {
    await searchHarness();
    const shared = addDoc(h, "Quasar launch plan", "The quasar launch is shared.", [U1, U2]);
    const mine = addDoc(h, "Quasar salaries", "Private quasar numbers.", [U1]);
    await h.sync();

    expect(await searchKeys(h, U1, "quasar")).toEqual([shared, mine].sort());
    expect(await searchKeys(h, U2, "quasar")).toEqual([shared]);
    expect(await searchKeys(h, U3, "quasar")).toEqual([]);
    expect(await searchKeys(h, "nobody@example.com", "quasar")).toEqual([]);
    expect(await searchKeys(h, U1, "quasar", "other-mirror")).toEqual([]);
  });

  it("finds prefixes, phrases and words without their accents", async () => {
    await searchHarness();
    const key = addDoc(h, "Café über alles", "Résumé of the zebracorn migration plan.", [U1]);
    await h.sync();

    expect(await searchKeys(h, U1, "cafe")).toEqual([key]);
    expect(await searchKeys(h, U1, "resume")).toEqual([key]);
    expect(await searchKeys(h, U1, "zebra*")).toEqual([key]);
    expect(await searchKeys(h, U1, '"zebracorn migration"')).toEqual([key]);
    expect(await searchKeys(h, U1, '"migration zebracorn"')).toEqual([]);
  });

  it("reads OR, NOT, parentheses and column filters alike on both dialects, ranks a title match first, and refuses bad syntax", async () => {
    await searchHarness();
    const inTitle = addDoc(h, "Narwhal census", "Counting sea creatures.", [U1]);
    const inText = addDoc(h, "Sea notes", "A narwhal was seen, and a beluga.", [U1]);
    const other = addDoc(h, "Beluga notes", "Only the beluga here.", [U1]);
    await h.sync();

    expect(await searchKeys(h, U1, "narwhal OR beluga")).toEqual([inTitle, inText, other].sort());
    expect(await searchKeys(h, U1, "narwhal NOT beluga")).toEqual([inTitle]);
    expect(await searchKeys(h, U1, "(narwhal OR beluga) AND seen")).toEqual([inText]);
    expect(await searchKeys(h, U1, "sea narwhal")).toEqual([inTitle, inText].sort());
    expect(await searchKeys(h, U1, "title:narwhal")).toEqual([inTitle]);
    expect(await searchKeys(h, U1, 'content_text:"a narwhal"')).toEqual([inText]);
    // FTS5 reads a column's name in any case; so must PostgreSQL.
    expect(await searchKeys(h, U1, "TITLE:narwhal")).toEqual([inTitle]);
    expect(await searchKeys(h, U1, 'Content_Text:"a narwhal"')).toEqual([inText]);
    const store = await openSearchStore();
    try {
      const hits = await store.search.query({ userEmail: U1, query: "narwhal", limit: 10 });
      expect(hits.map((hit) => hit.key)).toEqual([inTitle, inText]);
      expect(hits[1]?.snippet).toContain("«narwhal»");
      for (const bad of ['"unclosed', "AND OR", "nosuchcolumn:foo", "constructor:foo", "(a", "NOT a", "a OR"])
        await expect(
          store.search.query({ userEmail: U1, query: bad, limit: 10 }),
          bad,
        ).rejects.toBeInstanceOf(SearchQueryError);
    } finally {
      await store.close();
    }
  });

  it("finds the new text after an edit, not the old", async () => {
    await searchHarness();
    const key = addDoc(h, "Runbook", "Restart the flibbertigibbet service.", [U1]);
    await h.sync();
    expect(await searchKeys(h, U1, "flibbertigibbet")).toEqual([key]);

    h.sim.clock.advance(60_000);
    h.sim.docs.edit(h.sim.docs.list().find((d) => d.key === key)?.docId as string, {
      content: "Restart the snollygoster service.",
    });
    expect((await h.sync()).mode).toBe("incremental");

    expect(await searchKeys(h, U1, "snollygoster")).toEqual([key]);
    expect(await searchKeys(h, U1, "flibbertigibbet")).toEqual([]);
    expectFtsConsistent();
  });

  it("stops showing a document to a user whose access a full sweep revoked, keeps it for the other", async () => {
    await searchHarness();
    const key = addDoc(h, "Wombat roadmap", "wombat", [U1, U2]);
    await h.sync();
    const docId = h.sim.docs.list().find((d) => d.key === key)?.docId as string;
    h.sim.docs.setVisibility(docId, [U2]);

    await h.sync({ full: true });
    expect(await searchKeys(h, U1, "wombat")).toEqual([]);
    expect(await searchKeys(h, U2, "wombat")).toEqual([key]);
  });

  it("shows nothing to a user who left the project", async () => {
    await searchHarness(40);
    const key = addDoc(h, "Axolotl handbook", "axolotl", [U3]);
    await h.sync();
    expect(await searchKeys(h, U3, "axolotl")).toEqual([key]);
    h.sim.people.leaveProject(U3);

    await h.sync({ full: true });
    expect(await searchKeys(h, U3, "axolotl")).toEqual([]);
  });

  it("never returns a deleted resource, and drops it from the index", async () => {
    await searchHarness();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    const word = doc.title.match(/\p{L}{4,}/u)?.[0] as string;
    await h.sync();
    expect(await searchKeys(h, U1, `"${doc.title.replace(/"/g, "")}"`)).toContain(doc.key);
    h.sim.docs.remove(doc.docId);

    await h.sync({ full: true });
    expect(await searchKeys(h, U1, word)).not.toContain(doc.key);
    expectFtsConsistent();
  });
});

describe("syncmirror search at a terminal", () => {
  it("prints a document's control characters as \\xHH: a title cannot drive the terminal", async () => {
    await searchHarness(3);
    addDoc(h, "Quokka\u001b[2J\u001b]0;owned\u0007 notes", "quokka \u001b[31mred\u009b0m text", [U1]);
    expect((await h.sync()).outcome).toBe("succeeded");
    const r = await h.cli(["search", "--user", U1, "quokka"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Quokka\\x1b[2J\\x1b]0;owned\\x07 notes  [notion]");
    expect(r.stdout.replaceAll("\n", "")).not.toMatch(/\p{Cc}/u);
  });
});

describe("the index's life", () => {
  it.runIf(onSqlite)(
    "stays equal to the live resources after a kill -9 in the middle of a page",
    async () => {
      await searchHarness(300);
      const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "mid-page:250" });
      expect(crashed.code, crashed.stderr).toBeNull();
      expect(integrityOf(h.dbPath)).toBe("ok");
      const afterCrash = indexedAndLiveKeys(h);
      expect(afterCrash.live.length).toBeGreaterThan(0);
      expect(afterCrash.indexed).toEqual(afterCrash.live);
      expect(ftsIntegrity(h)).toBe("ok");

      const resumed = await h.cli(["sync"]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const done = indexedAndLiveKeys(h);
      expect(done.indexed).toEqual(done.live);
      expect(ftsIntegrity(h)).toBe("ok");
      expect(done.live.length).toBeGreaterThan(afterCrash.live.length);
    },
  );

  it("is dropped when search is turned off, and rebuilt from current rows when turned back on", async () => {
    await searchHarness();
    const key = addDoc(h, "Pangolin notes", "pangolin", [U1]);
    await h.sync();
    configureConsumers(h, { search: false });
    await h.sync();
    expect(searchIndexObjects(h)).toEqual([]);
    await expect(searchKeys(h, U1, "pangolin")).rejects.toThrow(/search index does not exist/);

    configureConsumers(h, { search: true });
    await h.sync();
    expect(await searchKeys(h, U1, "pangolin")).toEqual([key]);
  });

  it("is rebuilt by syncmirror reindex, which refuses while search is disabled", async () => {
    await searchHarness();
    const key = addDoc(h, "Okapi guide", "okapi", [U2]);
    await h.sync();
    const rebuilt = await h.cli(["reindex"]);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(rebuilt.stdout).toMatch(/search index rebuilt: \d+ live resources/);
    expect(await searchKeys(h, U2, "okapi")).toEqual([key]);
    expect(searchIndexObjects(h)).not.toEqual([]);
    expectFtsConsistent();

    configureConsumers(h, { search: false });
    const refused = await h.cli(["reindex"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/search is not enabled/);
  });

  it("is built by reindex on an empty mirror, and after edits made while search was off finds only the new text", async () => {
    await searchHarness(5);
    const empty = await h.cli(["reindex"]);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toMatch(/^search index rebuilt: 0 live resources/);
    const key = addDoc(h, "Gallimaufry", "Restart the flibbertigibbet service.", [U1]);
    await h.sync();

    configureConsumers(h, { search: false });
    h.sim.clock.advance(60_000);
    h.sim.docs.edit(h.sim.docs.list().find((d) => d.key === key)?.docId as string, {
      title: "Kerfuffle",
      content: "Restart the snollygoster service.",
    });
    expect((await h.sync()).mode).toBe("incremental");
    configureConsumers(h, { search: true });
    const before = await h.cli(["search", "--user", U1, "snollygoster"]);
    expect(before.code).toBe(2);
    expect(before.stderr).toBe(
      "syncmirror: the search index does not exist yet: run syncmirror reindex (syncmirror run and sync also build it at start)\n",
    );

    const found = async (query: string) => {
      const r = await h.cli(["search", "--user", U1, "--json", query]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).results.map((hit: { key: string }) => hit.key);
    };
    // A second reindex over the index the first built ends the same.
    for (const _ of [1, 2]) {
      const rebuilt = await h.cli(["reindex"]);
      expect(rebuilt.code, rebuilt.stderr).toBe(0);
      expect(await found("snollygoster")).toEqual([key]);
      expect(await found("title:kerfuffle")).toEqual([key]);
      expect(await found("flibbertigibbet")).toEqual([]);
      expect(await found("title:gallimaufry")).toEqual([]);
      expectFtsConsistent();
    }
  });
});

/**
 * PostgreSQL's reindex under load, made deterministic without timing: a transaction that holds a
 * writer's lock on `resources` (as a pass's page does) keeps the rebuild waiting, and pg_locks shows
 * who waits. A reader that had to wait for the rebuild would show there too.
 */
describe.runIf(!onSqlite)("reindex on PostgreSQL, beside readers and writers", () => {
  /** Backends of this database waiting for a lock, other than `except`. */
  const waitingPids = (except: readonly number[] = []): number[] =>
    h
      .query<{ pid: number }>(
        `SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE NOT l.granted AND a.datname = current_database()`,
      )
      .map((r) => r.pid)
      .filter((pid) => !except.includes(pid));

  /** The backend of the reindex just started, once it waits for the writer. */
  const rebuildWaiting = async (): Promise<number> =>
    until(() => waitingPids()[0], "reindex to wait for the writer");

  /** Search indexes on `resources` by name, "(invalid)" after one a rebuild cut short left. */
  const searchIndexes = () =>
    h
      .query<{ name: string; valid: boolean }>(
        `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'resources'::regclass AND c.relname LIKE 'resources_search%' ORDER BY 1`,
      )
      .map((r) => `${r.name}${r.valid ? "" : " (invalid)"}`);

  /** A writer's open transaction on `resources`: a rebuild waits for it to end, readers do not. */
  async function holdWriterLock(): Promise<{ pid: number; release(): Promise<void> }> {
    const client = new pg.Client({ connectionString: h.databaseUrl });
    await client.connect();
    await client.query("BEGIN");
    await client.query("LOCK TABLE resources IN ROW EXCLUSIVE MODE");
    const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]
      ?.pid as number;
    return {
      pid,
      async release() {
        try {
          await client.query("COMMIT");
        } finally {
          await client.end();
        }
      },
    };
  }

  const hits = async (query: string) => {
    const store = await openSearchStore();
    try {
      return await store.search.query({ userEmail: U1, query, limit: 100 });
    } finally {
      await store.close();
    }
  };

  it("answers searches while it rebuilds, finds the same afterwards, and leaves one valid index", async () => {
    await searchHarness(30);
    addDoc(h, "Axolotl care", "Axolotls regrow limbs.", [U1]);
    await h.sync();
    const queries = ["axolotl", "the", "title:axolotl"];
    const before = await Promise.all(queries.map(hits));
    expect(before.map((found) => found.length)).toEqual([1, expect.any(Number), 1]);
    expect(before[1]?.length).toBeGreaterThan(1);

    const writer = await holdWriterLock();
    let reindex: ReturnType<Harness["cli"]> | undefined;
    try {
      reindex = h.cli(["reindex"]);
      const rebuilder = await rebuildWaiting();
      const reader = h.cli(["search", "--user", U1, "--json", "axolotl"]);
      const first = await Promise.race([
        reader.then(() => "answered"),
        until(() => waitingPids([rebuilder]).length > 0, "a reader waiting").then(() => "waited"),
      ]);
      expect(first, "the search waited for the rebuild").toBe("answered");
      const read = await reader;
      expect(read.code, read.stderr).toBe(0);
      expect(JSON.parse(read.stdout).results).toHaveLength(1);
      expect(waitingPids(), "the rebuild still waits for the writer").toEqual([rebuilder]);
    } finally {
      await writer.release();
    }
    const rebuilt = await reindex;
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(rebuilt.stdout).toMatch(/^search index rebuilt: \d+ live resources/);
    expect(await Promise.all(queries.map(hits))).toEqual(before);
    expect(searchIndexes()).toEqual(["resources_search"]);
    expect(
      h.query("SELECT attname FROM pg_attribute WHERE attrelid = 'resources'::regclass AND attisdropped"),
      "no dropped column left behind",
    ).toEqual([]);
  });

  it("cut off from the database, ends in one line, exit 1; the next reindex drops what it left", async () => {
    await searchHarness(10);
    await h.sync();
    const before = await hits("the");
    expect(before.length).toBeGreaterThan(0);
    const writer = await holdWriterLock();
    try {
      const reindex = h.cli(["reindex"]);
      const rebuilder = await rebuildWaiting();
      h.query("SELECT pg_terminate_backend($1)", rebuilder);
      const cut = await reindex;
      expect(cut.code).toBe(1);
      expect(cut.stderr).toMatch(
        /^syncmirror: lost the connection to the PostgreSQL database in \$\w+ \(57P01 [^\n]*\n$/,
      );
    } finally {
      await writer.release();
    }
    expect(searchIndexes(), "the rebuild cut short left its copy").toContain(
      "resources_search_ccnew (invalid)",
    );

    const again = await h.cli(["reindex"]);
    expect(again.code, again.stderr).toBe(0);
    expect(searchIndexes()).toEqual(["resources_search"]);
    expect(await hits("the")).toEqual(before);
  });
});
