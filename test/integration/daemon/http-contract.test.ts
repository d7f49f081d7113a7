/**
 * SPEC "HTTP" as an outside caller of `syncmirror run` meets it: which listen address is in effect
 * (`$SYNCMIRROR_HTTP_LISTEN` over `http.listen`) decides whether `/status` is open without a token,
 * a token variable set but empty opens nothing, the open endpoints ignore credentials, and the
 * feed and search follow the daemon's own passes (a deletion, a narrowed access, a second mirror).
 */
import { describe, expect, it } from "vitest";
import { configureConsumers, HTTP_TOKEN, HTTP_TOKEN_ENV } from "../../helpers/consumers.js";
import { callDaemon, type DaemonProcess, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { lastSeq, pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, DATABASE_URL_ENV, type Harness } from "../../helpers/mirror-harness.js";
import { startCuttableProxy } from "../../helpers/tcp-proxy.js";
import { daemonSuite, editConfig, NEVER, setCrons } from "./setup.js";

const suite = daemonSuite();
const [U1, U2] = ["user1@example.com", "user2@example.com"];

const call = callDaemon;

const bearer = (token: string) => `Bearer ${token}`;

/** A harness whose daemon never schedules a pass by itself, listening where `listen` says. */
async function quietHarness(listen: string, docs = 10): Promise<Harness> {
  const h = suite.use(await createHarness({ sim: { docs } }));
  setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
  editConfig(h, (config) => {
    config.http = { ...(config.http as object), listen };
  });
  return h;
}

describe("the listen address in effect decides whether /status is open without a token", () => {
  it.each([
    { listen: "0.0.0.0:0", override: "127.0.0.1:0", host: "127.0.0.1", open: true },
    { listen: "127.0.0.1:0", override: "0.0.0.0:0", host: "127.0.0.1", open: false },
    { listen: "[::1]:0", override: undefined, host: "[::1]", open: true },
    { listen: "localhost:0", override: undefined, host: "localhost", open: true },
    // Loopback written otherwise: what decides is the address bound, not how it was spelled.
    { listen: "LOCALHOST:0", override: undefined, host: "127.0.0.1", open: true },
    { listen: "[0:0:0:0:0:0:0:1]:0", override: undefined, host: "[::1]", open: true },
    { listen: "0.0.0.0:0", override: "[::ffff:127.0.0.1]:0", host: "127.0.0.1", open: true },
  ])("http.listen $listen, overridden by $override: open $open", async (c) => {
    const h = await quietHarness(c.listen);
    const env: Record<string, string> = { SYNCMIRROR_HTTP_TOKEN: "" };
    if (c.override) env.SYNCMIRROR_HTTP_LISTEN = c.override;
    const d = await suite.daemon(h, { env, ready: false });
    await until(async () => (await call(d, "/readyz", { host: c.host })).status === 200, "/readyz 200");
    const status = await call(d, "/status", { host: c.host });
    expect(status.status).toBe(c.open ? 200 : 401);
    if (c.open) expect(status.json.mirrors.map((m: { mirror: string }) => m.mirror)).toEqual(["main"]);
    for (const path of ["/healthz", "/readyz", "/metrics"])
      expect((await call(d, path, { host: c.host })).status, path).toBe(200);
    // Consumer and console endpoints need a token even on loopback; none is configured here.
    for (const path of ["/v1/changes?after=0", "/v1/passes", "/v1/problems"]) {
      for (const authorization of [undefined, "Bearer ", "Bearer x"])
        expect((await call(d, path, { host: c.host, authorization })).status, path).toBe(401);
    }
    const pause = await call(d, "/v1/mirrors/main/pause", { host: c.host, method: "POST" });
    expect(pause.status).toBe(401);
    const cli = await h.cli(["status", "--json"]);
    expect(JSON.parse(cli.stdout).mirrors[0].paused).toBe(false);
  });
});

describe("the bearer token", () => {
  it("is needed for /status even on loopback once set; the open endpoints ignore credentials", async () => {
    const h = await quietHarness("127.0.0.1:0");
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } });
    expect((await call(d, "/status")).status).toBe(401);
    expect((await call(d, "/status", { authorization: bearer("wrong") })).status).toBe(401);
    expect((await call(d, "/status", { authorization: bearer(`${HTTP_TOKEN}x`) })).status).toBe(401);
    const ok = await call(d, "/status", { authorization: bearer(HTTP_TOKEN) });
    expect(ok.status).toBe(200);
    expect(ok.text).not.toContain(HTTP_TOKEN);
    // RFC 7235: the auth scheme is case-insensitive.
    expect((await call(d, "/status", { authorization: `bearer ${HTTP_TOKEN}` })).status).toBe(200);
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      for (const authorization of [undefined, bearer("wrong"), bearer(HTTP_TOKEN)])
        expect((await call(d, path, { authorization })).status, `${path} ${authorization}`).toBe(200);
    }
  });

  it("is read only from the variable http.token_env names, never from the default one", async () => {
    const h = await quietHarness("0.0.0.0:0");
    editConfig(h, (config) => {
      config.http = { ...(config.http as object), token_env: HTTP_TOKEN_ENV };
    });
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: "default-variable-token" } });
    for (const path of ["/status", "/v1/changes?after=0"]) {
      expect((await call(d, path, { authorization: bearer("default-variable-token") })).status, path).toBe(
        401,
      );
    }
  });

  it("opens nothing when its variable is set but empty, on any listener", async () => {
    const h = await quietHarness("0.0.0.0:0");
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: "" } });
    for (const path of ["/status", "/v1/changes?after=0", "/v1/passes"]) {
      for (const authorization of [undefined, "Bearer", "Bearer ", "Bearer  "])
        expect((await call(d, path, { authorization })).status, `${path} ${authorization}`).toBe(401);
    }
  });
});

/** A mirrored harness with the consumer endpoints on, served by a daemon that syncs only when asked. */
async function servedConsumers(docs = 30): Promise<{ h: Harness; d: DaemonProcess }> {
  const h = await quietHarness("127.0.0.1:0", docs);
  configureConsumers(h, { search: true });
  await h.sync();
  return { h, d: await suite.daemon(h) };
}

const auth = { authorization: bearer(HTTP_TOKEN) };

async function searchKeys(d: DaemonProcess, user: string, q: string, mirror?: string): Promise<string[]> {
  const m = mirror ? `&mirror=${mirror}` : "";
  const res = await call(d, `/v1/search?user=${user}&q=${encodeURIComponent(q)}${m}`, auth);
  expect(res.status, res.text).toBe(200);
  return res.json.results.map((r: { key: string }) => r.key);
}

async function fullSuccessAt(d: DaemonProcess): Promise<string | null> {
  return (await call(d, "/status", auth)).json.mirrors[0].last_full_success_at;
}

const phrase = (title: string) => `"${title.replace(/"/g, "")}"`;

describe("the feed and search follow the daemon's own passes", () => {
  it("wakes a long poll with the delete and the narrowed access a full pass commits; search follows", async () => {
    const { h, d } = await servedConsumers();
    const removed = pickDoc(h, (x) => x.visibleTo.includes(U1) && x.visibleTo.includes(U2));
    const narrowed = pickDoc(
      h,
      (x) => x.key !== removed.key && x.visibleTo.includes(U1) && x.visibleTo.includes(U2),
    );
    expect(await searchKeys(d, U1, phrase(narrowed.title))).toContain(narrowed.key);
    expect(await searchKeys(d, U1, phrase(removed.title))).toContain(removed.key);

    const fullBefore = await fullSuccessAt(d);
    const from = lastSeq(h);
    const poll = call(d, `/v1/changes?after=${from}&wait=60&limit=1000`, auth);
    h.sim.clock.advance(60_000);
    h.sim.docs.remove(removed.docId);
    h.sim.docs.setVisibility(narrowed.docId, [U2]);
    const trigger = await call(d, "/v1/mirrors/main/trigger", {
      ...auth,
      method: "POST",
      body: JSON.stringify({ mode: "full" }),
    });
    expect(trigger.status, trigger.text).toBe(200);

    const first = await poll;
    expect(first.status).toBe(200);
    expect(first.json.changes.length).toBeGreaterThan(0);
    // Read on to the end of the pass: the long poll answers with the first commit.
    await until(async () => (await fullSuccessAt(d)) !== fullBefore, "the full pass to succeed");
    const page = await call(d, `/v1/changes?after=${from}&limit=1000`, auth);
    const byKey = new Map(page.json.changes.map((c: { key: string }) => [c.key, c]));
    expect(byKey.get(removed.key)).toMatchObject({
      op: "delete",
      resource: expect.objectContaining({
        key: removed.key,
        deleted_at: expect.any(String),
        content_text: null,
      }),
      access: [],
    });
    expect(byKey.get(narrowed.key)).toMatchObject({
      op: "access",
      resource: expect.objectContaining({ key: narrowed.key, deleted_at: null }),
      access: [expect.objectContaining({ mirror: "main", user_email: U2 })],
    });

    expect(await searchKeys(d, U1, phrase(narrowed.title))).not.toContain(narrowed.key);
    expect(await searchKeys(d, U2, phrase(narrowed.title))).toContain(narrowed.key);
    for (const user of [U1, U2])
      expect(await searchKeys(d, user, phrase(removed.title))).not.toContain(removed.key);
    const cli = await h.cli(["search", "--user", U1, "--json", phrase(narrowed.title)]);
    expect(JSON.parse(cli.stdout).results.map((r: { key: string }) => r.key)).not.toContain(narrowed.key);
  });

  it("shows one mirror's view of the feed and of search with mirror=", async () => {
    const h = await quietHarness("127.0.0.1:0", 30);
    configureConsumers(h, { search: true });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    const second = h.sim.configs.create({ name: "notion only", serverIds: [notion] });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "other", sync_config_id: second });
    });
    const synced = await h.cli(["sync"]);
    expect(synced.code, synced.stderr).toBe(0);
    const d = await suite.daemon(h);

    const page = await call(d, "/v1/changes?after=0&limit=1000&mirror=other", auth);
    expect(page.status, page.text).toBe(200);
    const keys = new Set<string>(page.json.changes.map((c: { key: string }) => c.key));
    const otherKeys = h
      .query<{ key: string }>("SELECT DISTINCT key FROM resource_access WHERE mirror = 'other'")
      .map((r) => r.key);
    expect(otherKeys.length).toBeGreaterThan(0);
    for (const key of otherKeys) expect(keys.has(key), key).toBe(true);
    for (const key of keys) expect(key.startsWith("notion:"), key).toBe(true);
    for (const c of page.json.changes) for (const a of c.access) expect(a.mirror, c.key).toBe("other");

    const github = pickDoc(h, (x) => x.key.startsWith("github:") && x.visibleTo.includes(U1));
    expect(await searchKeys(d, U1, phrase(github.title), "main")).toContain(github.key);
    expect(await searchKeys(d, U1, phrase(github.title), "other")).not.toContain(github.key);
  });
});

describe("/v1/search input", () => {
  it("reads a control character in q (a NUL) as a space, on either store, never answering 500", async () => {
    const { h, d } = await servedConsumers(20);
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));
    const [first, second] = doc.title.split(" ");
    const spaced = await searchKeys(d, U1, `${first} ${second ?? ""}`);
    expect(spaced).toContain(doc.key);
    expect(await searchKeys(d, U1, `${first}\u0000${second ?? ""}`)).toEqual(spaced);
    expect(await searchKeys(d, U1, `"${first}\u0001${second ?? ""}"`)).toContain(doc.key);
    const onlyNul = await call(d, `/v1/search?user=${U1}&q=%00`, auth);
    expect(onlyNul.status).toBe(400);
    expect(onlyNul.json.error.message).toMatch(/^q: is required/);
  });
});

describe("syncmirror reindex", () => {
  it("builds the index of a mirror synced while search was off; until then search says to run it", async () => {
    const h = await quietHarness("127.0.0.1:0", 20);
    configureConsumers(h, { search: false });
    await h.sync();
    configureConsumers(h, { search: true });
    const doc = pickDoc(h, (x) => x.visibleTo.includes(U1));

    const before = await h.cli(["search", "--user", U1, phrase(doc.title)]);
    expect(before.code).toBe(2);
    expect(before.stderr).toMatch(/run syncmirror reindex/);
    expect(before.stderr, "search.enabled is already true").not.toMatch(/set search\.enabled/);

    const live = h.query<{ n: number }>("SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL")[0]?.n;
    const built = await h.cli(["reindex"]);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stdout).toMatch(new RegExp(`search index rebuilt: ${live} live resources`));
    const found = await h.cli(["search", "--user", U1, "--json", phrase(doc.title)]);
    expect(JSON.parse(found.stdout).results.map((r: { key: string }) => r.key)).toContain(doc.key);

    const d = await suite.daemon(h);
    expect(await searchKeys(d, U1, phrase(doc.title))).toContain(doc.key);
    // SQLite: reindex takes the writer lock the daemon holds; PostgreSQL: it runs beside the daemon.
    const beside = await h.cli(["reindex"]);
    expect(beside.code, beside.stderr).toBe(h.dialect === "postgres" ? 0 : 1);
    expect(await searchKeys(d, U1, phrase(doc.title))).toContain(doc.key);
  });
});

describe.runIf(onPostgres)("while the database does not answer (PostgreSQL)", () => {
  it("answers /status and /v1/* 503 NOT_READY without its password, and serves again once it answers", async () => {
    const h = await quietHarness("127.0.0.1:0", 10);
    configureConsumers(h, { search: true });
    await h.sync();
    const proxy = await startCuttableProxy(h.databaseUrl as string);
    try {
      const url = new URL(proxy.url);
      url.password = "db-password-3e9a71";
      const d = await suite.daemon(h, { env: { [DATABASE_URL_ENV]: url.toString() } });
      const paths = [
        "/status",
        "/v1/changes?after=0",
        `/v1/search?user=${U1}&q=the`,
        "/v1/passes",
        "/v1/problems",
      ];
      for (const path of paths) expect((await call(d, path, auth)).status, path).toBe(200);

      await proxy.cut();
      await until(async () => (await call(d, "/readyz")).status === 503, "/readyz 503 while cut off");
      expect((await call(d, "/healthz")).status).toBe(200);
      expect((await call(d, "/metrics")).status).toBe(200);
      for (const path of paths) {
        const res = await call(d, path, auth);
        expect(res.status, path).toBe(503);
        expect(res.json.error.code, path).toBe("NOT_READY");
        expect(res.text, path).not.toContain("db-password-3e9a71");
      }

      await proxy.restore();
      await until(async () => (await call(d, "/readyz")).status === 200, "/readyz 200 again");
      for (const path of paths) expect((await call(d, path, auth)).status, path).toBe(200);
      expect(d.stderr()).not.toContain("db-password-3e9a71");
    } finally {
      await proxy.close();
    }
  });
});
