/**
 * `/v1/changes` and `/v1/search` on a running daemon (either dialect), and the `changes` / `search` commands:
 * bearer token always, the feed's shape and paging, long polls woken by the daemon's commits and another process's,
 * and every bad input answered 400 / exit 2 in plain words.
 */
import { describe, expect, it } from "vitest";
import { PAGE_SQL } from "../../../src/store/postgres/feed.js";
import { RESOURCE_COLUMNS } from "../../../src/store/types.js";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, spawnCli, until } from "../../helpers/daemon.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { accessRows, lastSeq, pickDoc, resourceRow, TOMBSTONE } from "../../helpers/mirror-db.js";
import { createHarness, DATABASE_URL_ENV, type Harness } from "../../helpers/mirror-harness.js";
import { startHoldingProxy } from "../../helpers/tcp-proxy.js";
import { daemonSuite, EVERY_SECOND, editConfig, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const [U1, U2] = ["user1@example.com", "user2@example.com"];

interface Got {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, shapes are asserted
  json: any;
}

async function get(d: DaemonProcess, path: string, token: string | null = HTTP_TOKEN): Promise<Got> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const res = await fetch(`http://127.0.0.1:${d.port}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/** A mirrored harness (one in-process pass, search on) configured for a daemon that never syncs. */
async function mirrored(options: { crons?: typeof EVERY_SECOND } = {}): Promise<Harness> {
  const h = suite.use(await createHarness({ sim: { docs: 30 } }));
  configureConsumers(h, { search: true });
  await h.sync();
  setCrons(h, { incremental_cron: options.crons ?? NEVER, full_cron: NEVER });
  return h;
}

/** `mirrored()` and a daemon serving it. */
async function servedMirror(
  options: { crons?: typeof EVERY_SECOND } = {},
): Promise<{ h: Harness; d: DaemonProcess }> {
  const h = await mirrored(options);
  return { h, d: await suite.daemon(h) };
}

describe("/v1 authentication", () => {
  it("answers 401 and nothing else without the right bearer token, even on loopback", async () => {
    const { d } = await servedMirror();
    const paths = ["/v1/changes?after=0", `/v1/search?user=${U1}&q=the`, "/v1/other", "/v1/changes?after=-1"];
    const tokens = [null, "wrong", `${HTTP_TOKEN}x`, HTTP_TOKEN.slice(0, -1), ""];
    for (const path of paths) {
      for (const token of tokens) {
        const res = await get(d, path, token);
        expect(res.status, `${path} with ${token}`).toBe(401);
        expect(res.json).toEqual({
          error: { code: "UNAUTHORIZED", message: expect.stringMatching(/^unauthorized/) },
        });
      }
      const basic = await fetch(`http://127.0.0.1:${d.port}${path}`, {
        headers: { authorization: `Basic ${Buffer.from(`x:${HTTP_TOKEN}`).toString("base64")}` },
      });
      expect(basic.status).toBe(401);
    }
  });
});

describe("/v1/changes", () => {
  it("pages through every change with each key's current row and access list", async () => {
    const { h, d } = await servedMirror();
    const seen: { seq: number; key: string }[] = [];
    let after = 0;
    for (;;) {
      const page = await get(d, `/v1/changes?after=${after}&limit=7`);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(HTTP_TOKEN);
      seen.push(...page.json.changes);
      after = page.json.next_after;
      if (!page.json.has_more) break;
      expect(page.json.changes).toHaveLength(7);
    }
    expect(seen.map((c) => c.seq)).toEqual(
      h.query<{ seq: number }>("SELECT seq FROM changes ORDER BY seq").map((r) => r.seq),
    );
    expect(after).toBe(lastSeq(h));
    // A cursor past the newest seq (kept from another database) is brought back to the newest.
    expect((await get(d, `/v1/changes?after=${lastSeq(h) + 1000}`)).json).toEqual({
      changes: [],
      next_after: lastSeq(h),
      has_more: false,
    });

    const doc = pickDoc(h, (x) => x.visibleTo.length >= 2);
    const [change] = (await get(d, "/v1/changes?after=0&limit=1000")).json.changes.filter(
      (c: { key: string }) => c.key === doc.key,
    );
    const row = resourceRow(h, doc.key);
    expect(change.resource).toMatchObject({
      key: doc.key,
      content_hash: row?.content_hash,
      content_text: row?.content_text,
      deleted_at: null,
    });
    // Every public column of `resources`, as the docs promise.
    expect(Object.keys(change.resource).sort()).toEqual([...RESOURCE_COLUMNS, "deleted_at"].sort());
    expect(change.access).toEqual(
      accessRows(h, doc.key).map((a) => ({ mirror: "main", user_email: a.user_email, source: a.source })),
    );
  });

  it("reads from the start without `after`, and serves a limit above a page's 1000 as 1000", async () => {
    const { d } = await servedMirror();
    const fromStart = await get(d, "/v1/changes?after=0&limit=1000");
    expect(fromStart.json.changes.length).toBeGreaterThan(0);
    for (const path of [
      "/v1/changes?limit=1000",
      "/v1/changes?after=&limit=1000",
      "/v1/changes?after=0&limit=1000000",
      "/v1/changes?after=0&limit=99999999999999999999",
    ]) {
      const res = await get(d, path);
      expect(res.status, path).toBe(200);
      expect(res.json, path).toEqual(fromStart.json);
    }
    const search = await get(d, `/v1/search?user=${U1}&q=the&limit=123456789012345678901234567890`);
    expect(search.status).toBe(200);
    expect(search.json).toEqual((await get(d, `/v1/search?user=${U1}&q=the&limit=100`)).json);
  });

  it("hands over a deleted key's tombstone as its current row, with no access", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 30 } }));
    configureConsumers(h, { search: true });
    await h.sync();
    const doc = pickDoc(h, (x) => x.visibleTo.length >= 1);
    h.sim.docs.setVisibility(doc.docId, []);
    const from = lastSeq(h);
    await h.sync({ full: true });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const d = await suite.daemon(h);
    const page = await get(d, `/v1/changes?after=${from}`);
    expect(page.json.changes).toHaveLength(1);
    const [change] = page.json.changes;
    const tombstone = resourceRow(h, doc.key);
    expect(tombstone?.deleted_at).toEqual(expect.any(String));
    expect(change).toMatchObject({ key: doc.key, op: "delete", access: [] });
    expect(change.resource).toMatchObject({
      ...TOMBSTONE,
      key: doc.key,
      content_hash: tombstone?.content_hash,
      deleted_at: new Date(String(tombstone?.deleted_at)).toISOString(),
    });
  });

  it("prints the same page from syncmirror changes", async () => {
    const { h, d } = await servedMirror();
    const http = await get(d, "/v1/changes?after=2&limit=3");
    const cli = await h.cli(["changes", "--after", "2", "--limit", "3"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(http.json);
  });

  it("times out a long poll cleanly when nothing commits", async () => {
    const { h, d } = await servedMirror();
    const res = await get(d, `/v1/changes?after=${lastSeq(h)}&wait=1`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ changes: [], next_after: lastSeq(h), has_more: false });
    // Seconds, not only whole ones: a client polling often waits half a second.
    const half = await get(d, `/v1/changes?after=${lastSeq(h)}&wait=0.5`);
    expect(half.status, half.text).toBe(200);
    expect(half.json).toEqual({ changes: [], next_after: lastSeq(h), has_more: false });
  });

  it("wakes a long poll when the daemon commits a change", async () => {
    const { h, d } = await servedMirror({ crons: EVERY_SECOND });
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    const from = lastSeq(h);
    const poll = get(d, `/v1/changes?after=${from}&wait=60`);
    h.sim.clock.advance(60_000);
    h.sim.docs.edit(doc.docId, { content: "long poll woke up" });

    const res = await poll;
    expect(res.status).toBe(200);
    expect(res.json.changes).toEqual([
      expect.objectContaining({
        key: doc.key,
        op: "upsert",
        resource: expect.objectContaining({ content_text: "long poll woke up" }),
      }),
    ]);
  });

  it("wakes a long poll when syncmirror forget revokes a retired mirror's access beside the daemon", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 20 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "other", sync_config_id: h.sim.configs.create() });
    });
    await h.sync();
    await h.sync({ mirror: "other" });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).splice(1, 1);
    });
    const d = await suite.daemon(h);
    const from = lastSeq(h);
    const poll = get(d, `/v1/changes?after=${from}&limit=1000&wait=20`);
    // Requests of one client are served in order: once this one answered, the poll has read and waits.
    expect((await get(d, `/v1/changes?after=${from}`)).json.changes).toEqual([]);
    const forgot = await h.cli(["forget", "--mirror", "other"]);
    expect(forgot.code, forgot.stderr).toBe(0);

    const res = await poll;
    expect(res.status).toBe(200);
    expect(res.json.changes.length, "the revocations forget committed").toBeGreaterThan(0);
    expect(res.json.changes.every((c: { op: string }) => c.op === "access")).toBe(true);
    // Forget commits a transaction per pair: the poll answers with the first.
    expect(res.json.next_after).toBeGreaterThan(from);
  });
});

describe.runIf(TEST_DIALECT === "postgres")("/v1/changes on PostgreSQL", () => {
  it("wakes a long poll when another process commits (LISTEN on syncmirror_changes)", async () => {
    const { h, d } = await servedMirror();
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    const poll = get(d, `/v1/changes?after=${lastSeq(h)}&wait=60`);
    await until(
      () =>
        h.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'")
          .length > 0,
      "the daemon's LISTEN connection",
    );
    h.sim.clock.advance(60_000);
    h.sim.docs.edit(doc.docId, { content: "woken by another process" });
    await h.sync();

    const res = await poll;
    expect(res.json.changes).toEqual([
      expect.objectContaining({
        key: doc.key,
        resource: expect.objectContaining({ content_text: "woken by another process" }),
      }),
    ]);
  });

  it("wakes a long poll for a commit that landed before its LISTEN was in place", async () => {
    const h = await mirrored();
    const proxy = await startHoldingProxy(h.databaseUrl as string, "LISTEN syncmirror_changes");
    try {
      const d = await suite.daemon(h, { env: { [DATABASE_URL_ENV]: proxy.url } });
      const from = lastSeq(h);
      const reads = proxy.sent(PAGE_SQL);
      const poll = get(d, `/v1/changes?after=${from}&wait=20`);
      // The poll has read (its snapshot is taken) and its LISTEN waits at the proxy: a commit
      // now notifies nobody in the daemon.
      await until(() => proxy.holding() && proxy.sent(PAGE_SQL) > reads, "the poll's read, its LISTEN held");
      const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
      h.sim.clock.advance(60_000);
      h.sim.docs.edit(doc.docId, { content: "committed before the LISTEN" });
      await h.sync();
      proxy.release();

      const res = await poll;
      expect(res.json.changes).toEqual([
        expect.objectContaining({
          key: doc.key,
          resource: expect.objectContaining({ content_text: "committed before the LISTEN" }),
        }),
      ]);
    } finally {
      await proxy.close();
    }
  });
});

describe("/v1/search", () => {
  it("answers 404 whatever the query while search is not enabled", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 5 } }));
    configureConsumers(h, { search: false });
    await h.sync();
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const d = await suite.daemon(h);
    for (const path of [`/v1/search?user=${U1}&q=the`, "/v1/search?q=the", `/v1/search?user=${U1}`]) {
      const res = await get(d, path);
      expect(res.status, path).toBe(404);
      expect(res.json, path).toEqual({
        error: { code: "SEARCH_UNAVAILABLE", message: "search is not enabled: set search.enabled: true" },
      });
    }
  });

  it("answers as the named user only, with title, url, source, snippet and key", async () => {
    const { h, d } = await servedMirror();
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1) && !x.visibleTo.includes(U2));
    const q = encodeURIComponent(`"${doc.title.replace(/"/g, "")}"`);
    const mine = await get(d, `/v1/search?user=${U1}&q=${q}`);
    expect(mine.status).toBe(200);
    expect(mine.json.results).toContainEqual({
      key: doc.key,
      title: doc.title,
      url: expect.any(String),
      source_type: expect.any(String),
      snippet: expect.stringContaining("«"),
    });
    expect(mine.text).not.toContain(U2);
    const theirs = await get(d, `/v1/search?user=${U2}&q=${q}`);
    expect(theirs.json.results.map((r: { key: string }) => r.key)).not.toContain(doc.key);
    expect((await get(d, `/v1/search?user=stranger@example.com&q=${q}`)).json).toEqual({ results: [] });
    const shouted = await get(d, `/v1/search?user=${U1.toUpperCase()}&q=${q}`);
    expect(
      shouted.json.results.map((r: { key: string }) => r.key),
      "emails match in any case",
    ).toContain(doc.key);
  });
});

describe("bad input", () => {
  it("answers 400 with a plain message, never SQL text or the token", async () => {
    const { d } = await servedMirror();
    const cases: [string, RegExp][] = [
      ["/v1/changes?after=-1", /after: must be 0 or more/],
      ["/v1/changes?after=abc", /after: must be a whole number/],
      ["/v1/changes?after=1.5", /after: must be a whole number/],
      // Digits past any number's reach are too large, not "not digits".
      ["/v1/changes?after=99999999999999999999", /^after: is too large: must be at most 9007199254740991$/],
      ["/v1/changes?after=9007199254740992", /^after: is too large: must be at most 9007199254740991$/],
      ["/v1/changes?after=-99999999999999999999", /^after: must be 0 or more$/],
      ["/v1/changes?after=0&limit=0", /limit: must be at least 1/],
      ["/v1/changes?after=0&wait=-5", /wait: must be 0 or more/],
      ["/v1/changes?after=0&wait=-0.5", /^wait: must be 0 or more$/],
      ["/v1/changes?after=0&wait=soon", /^wait: must be a number of seconds written in digits$/],
      ["/v1/changes?after=0&wait=1e3", /^wait: must be a number of seconds written in digits$/],
      ["/v1/changes?after=0&after=1", /after: given more than once/],
      ["/v1/changes?after=0&mirror=nope", /^mirror: no mirror named "nope" in the config \(known: main\)$/],
      ["/v1/changes?after=0&afer=1", /^afer: unknown parameter$/],
      ["/v1/search?q=the", /user: is required/],
      [`/v1/search?user=${U1}`, /q: is required/],
      [`/v1/search?user=${U1}&q=%20`, /q: is required/],
      [`/v1/search?user=${U1}&q=%22unclosed`, /^q: the search query is not valid/],
      [`/v1/search?user=${U1}&q=AND%20OR`, /the search query is not valid/],
      [
        `/v1/search?user=${U1}&q=%2B%2B%2B`,
        /^q: the search query is not valid: "\+\+\+" holds no letter or digit to search for$/,
      ],
      [`/v1/search?user=${U1}&q=(a`, /the search query is not valid/],
    ];
    for (const [path, message] of cases) {
      const res = await get(d, path);
      expect(res.status, path).toBe(400);
      expect(res.json.error.message, path).toMatch(message);
      // A query the index cannot search, however it fails, is one code (docs/errors.md).
      if (/search query is not valid/.test(String(message)))
        expect(res.json.error.code, path).toBe("SEARCH_QUERY_INVALID");
      expect(res.text, path).not.toMatch(/sqlite|fts5|syntax error|no such/i);
      expect(res.text).not.toContain(HTTP_TOKEN);
    }
  });

  it("exits 2 from the CLI with the same messages", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 5 } }));
    configureConsumers(h, { search: true });
    await h.sync();
    const cases: [string[], RegExp][] = [
      [["changes", "--after=-1"], /--after: must be 0 or more/],
      [["changes", "--after", "-1"], /--after: must be 0 or more/],
      [
        ["changes", "--after", "99999999999999999999"],
        /--after: is too large: must be at most 9007199254740991/,
      ],
      [["search", "the"], /--user: is required/],
      [["search", "--user", U1], /QUERY: is required/],
      [["search", "--user", U1, '"unclosed'], /the search query is not valid/],
    ];
    for (const [args, message] of cases) {
      const r = await h.cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/sqlite|fts5|\n\s+at /i);
    }
  });
});

describe("syncmirror search and changes --follow", () => {
  it("searches as one user, in JSON or as lines", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 20 } }));
    configureConsumers(h, { search: true });
    await h.sync();
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    const query = `"${doc.title.replace(/"/g, "")}"`;
    const json = await h.cli(["search", "--user", U1, "--json", query]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).results.map((r: { key: string }) => r.key)).toContain(doc.key);
    const text = await h.cli(["search", "--user", U1, "--limit", "1", ...query.split(" ")]);
    expect(text.stdout).toContain(doc.key);
    expect((await h.cli(["search", "--user", "stranger@example.com", query])).stdout).toMatch(
      /^no results: no user stranger@example\.com in any mirror \(users there include /,
    );
  });

  it("long-polls one page with --wait, as /v1/changes?wait= does", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 20 } }));
    await h.sync();
    const from = lastSeq(h);
    const idle = await h.cli(["changes", "--after", String(from), "--wait", "1"]);
    expect(idle.code, idle.stderr).toBe(0);
    expect(JSON.parse(idle.stdout)).toEqual({ changes: [], next_after: from, has_more: false });

    const poll = spawnCli(
      ["changes", "--after", String(from), "--wait", "60", "--config", h.configPath],
      h.env,
    );
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    h.sim.clock.advance(60_000);
    h.sim.docs.edit(doc.docId, { content: "waited for" });
    await h.sync();
    const done = await poll.exited;
    expect(done.code, poll.stderr()).toBe(0);
    expect(JSON.parse(poll.stdout()).changes).toEqual([
      expect.objectContaining({
        key: doc.key,
        op: "upsert",
        resource: expect.objectContaining({ content_text: "waited for" }),
      }),
    ]);
    const both = await h.cli(["changes", "--after", "0", "--wait", "1", "--follow"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--wait: not with --follow/);
  });

  it("follows new changes until stopped", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 20 } }));
    await h.sync();
    const from = lastSeq(h);
    const follow = spawnCli(
      ["changes", "--after", String(from), "--follow", "--config", h.configPath],
      h.env,
    );
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    h.sim.clock.advance(60_000);
    h.sim.docs.edit(doc.docId, { content: "followed" });
    await h.sync();

    const line = await until(
      () =>
        follow
          .stdout()
          .split("\n")
          .find((l) => l.includes(doc.key)),
      "the followed change",
    );
    expect(JSON.parse(line).changes).toEqual([expect.objectContaining({ key: doc.key, op: "upsert" })]);
    expect((await follow.stop("SIGTERM")).code).toBe(0);
  });
});
