import { MockAgent } from "undici";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { type ApiClient, type ApiClientOptions, createApiClient } from "../../../src/api/client.js";
import {
  AbortedError,
  BadRequestError,
  BadResponseError,
  CannotStartError,
  ConflictError,
  ContinueOutcomeUnknownError,
  FeatureDisabledError,
  NotFoundError,
  TriggerOutcomeUnknownError,
  UnauthorizedError,
  UnavailableError,
} from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";

const ORIGIN = "http://upstream.test";
const TOKEN = "tok-5ecret-do-not-leak-8f2a";
const SYNC_ID = "4f8a2c61-9e3b-4d75-a0c2-6b1e8d3f5a97";
const CONFIG_ID = "7d2c9e41-1a5b-4f3e-8c70-2b9d4e6f8a13";
const JSON_HEADERS = { "content-type": "application/json" };

interface Harness {
  agent: MockAgent;
  pool: ReturnType<MockAgent["get"]>;
  client: ApiClient;
  sleeps: number[];
  attempts: { method: string; route: string; code: string; durationSeconds: number }[];
}

const agents: MockAgent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
});

function setup(overrides: Partial<ApiClientOptions> = {}): Harness {
  const agent = new MockAgent({ enableCallHistory: true });
  agent.disableNetConnect();
  agents.push(agent);
  const sleeps: number[] = [];
  const attempts: Harness["attempts"] = [];
  const client = createApiClient({
    baseUrl: `${ORIGIN}/api/v1`,
    token: TOKEN,
    tokenEnv: "SYNCMIRROR_API_TOKEN",
    timeoutMs: 30_000,
    maxAttempts: 4,
    retriedBy: "next pass",
    log: silentLogger(),
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onRequest: (r) => attempts.push(r),
    dispatcher: agent,
    ...overrides,
  });
  return { agent, pool: agent.get(ORIGIN), client, sleeps, attempts };
}

/** Matches a request path by its pathname, whatever its query string. */
const at = (pathname: string) => (path: string) => path.split("?")[0] === pathname;

function networkError(code: string): Error {
  return Object.assign(new Error(`${code} from the test`), { code });
}

const runListItem = (syncId: string, createdAt = "2026-11-21T06:00:02+00:00") => ({
  sync_id: syncId,
  sync_config_id: CONFIG_ID,
  trigger_id: "0b6e1f0a-5d3c-4c8e-9a61-3f2d7b9c1e04",
  user_email: "ana@example.com",
  status: "running",
  since: null,
  created_at: createdAt,
  sources: [
    {
      source: "notion",
      source_type: "notion",
      server_name: "Team Wiki",
      server_instance_id: "a1c3e5f7",
      task_id: "c2e4f6a8",
      status: "RUNNING",
    },
  ],
});

const runDetail = () => ({
  ...runListItem(SYNC_ID),
  status: "failed",
  sources: [
    {
      ...runListItem(SYNC_ID).sources[0],
      status: "FAILED",
      started_at: "2026-11-21T06:00:06+00:00",
      completed_at: "2026-11-21T06:01:12+00:00",
      session_id: "a6c8d0e2",
      error: "The upstream server returned 502 for every tool call.",
      summary: null,
    },
  ],
});

const triggerResponse = () => ({
  trigger_id: "0b6e1f0a-5d3c-4c8e-9a61-3f2d7b9c1e04",
  sync_config_id: CONFIG_ID,
  status: "pending",
  since: null,
  runs: [{ sync_id: SYNC_ID, user_email: "ana@example.com", sources: [] }],
  skipped: [],
  skipped_count: 0,
  resolved_skill: null,
  skill_warning: null,
});

const exportPage = () => ({
  schema_version: 1,
  engine_version: 2,
  sync_id: SYNC_ID,
  since: null,
  sources: [],
  resources: [{ key: "notion:a:1", anything: "kept as unknown" }],
  page: { offset: 0, limit: 500, total: 1, next_offset: null },
});

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("api client: requests and bodies", () => {
  it("sends the bearer token and parses a run", async () => {
    const { pool, client, agent } = setup();
    pool
      .intercept({
        path: `/api/v1/sync-task/${SYNC_ID}`,
        method: "GET",
        headers: { authorization: `Bearer ${TOKEN}` },
      })
      .reply(200, runDetail(), { headers: JSON_HEADERS });
    const run = await client.getRun(SYNC_ID);
    expect(run.status).toBe("failed");
    expect(run.sources[0]?.error).toContain("502");
    expect(agent.getCallHistory()?.lastCall()?.headers).toMatchObject({ accept: "application/json" });
  });

  it("tolerates unknown fields anywhere in a body", async () => {
    const { pool, client } = setup();
    const body = { ...runDetail(), brand_new: { nested: true } };
    body.sources = body.sources.map((s) => ({ ...s, also_new: 1 }));
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, body, { headers: JSON_HEADERS });
    const run = await client.getRun(SYNC_ID);
    expect(run.sync_id).toBe(SYNC_ID);
  });

  it("keeps export resources unvalidated for the ingest and sends offset, limit and source", async () => {
    const { pool, client, agent } = setup();
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}/export`) }).reply(200, exportPage());
    const page = await client.getExportPage(SYNC_ID, { offset: 0, limit: 500, source: "notion" });
    expect(page.resources).toEqual([{ key: "notion:a:1", anything: "kept as unknown" }]);
    expect(page.page.next_offset).toBeNull();
    expect(agent.getCallHistory()?.lastCall()?.searchParams).toEqual({
      source: "notion",
      offset: "0",
      limit: "500",
    });
  });

  it("refuses a body that is not JSON, naming the route", async () => {
    const { pool, client } = setup();
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, "<html>proxy login</html>");
    const error = await caught(client.getRun(SYNC_ID));
    expect(error).toBeInstanceOf(BadResponseError);
    expect((error as BadResponseError).message).toContain("GET /sync-task/{sync_id}");
    expect((error as BadResponseError).message).not.toContain(SYNC_ID);
  });

  it("refuses a body missing a required field, naming its path", async () => {
    const { pool, client } = setup();
    const item: Record<string, unknown> = runListItem(SYNC_ID);
    delete item.sync_id;
    pool.intercept({ path: at("/api/v1/sync-task") }).reply(200, { items: [item], meta: {} });
    const error = (await caught(client.listRuns({ sync_config_id: CONFIG_ID }))) as BadResponseError;
    expect(error).toBeInstanceOf(BadResponseError);
    expect(error.message).toContain("GET /sync-task");
    expect(error.message).toContain("items.0.sync_id");
    expect(error.detail).toMatchObject({ issues: [{ path: "items.0.sync_id" }] });
  });

  it("sends only sync_config_id and since in a trigger", async () => {
    const { pool, client, agent } = setup();
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, triggerResponse());
    const response = await client.trigger({ sync_config_id: CONFIG_ID, since: "2026-11-20T00:00:00Z" });
    expect(response.runs[0]?.sync_id).toBe(SYNC_ID);
    const call = agent.getCallHistory()?.lastCall();
    expect(JSON.parse(call?.body ?? "")).toEqual({
      sync_config_id: CONFIG_ID,
      since: "2026-11-20T00:00:00Z",
    });
    expect(call?.headers).toMatchObject({ "content-type": "application/json" });
  });

  it("lists projects and syncable sources", async () => {
    const { pool, client, agent } = setup();
    pool.intercept({ path: "/api/v1/projects" }).reply(200, [{ id: "p1", name: "Eng", extra: 1 }]);
    pool.intercept({ path: at("/api/v1/sync-configs/sources") }).reply(200, {
      sources: [{ server_instance_id: "s1", server_name: "Wiki", display_name: null, source_type: "notion" }],
    });
    expect(await client.listProjects()).toEqual([{ id: "p1", name: "Eng" }]);
    expect((await client.listSources("p1"))[0]?.source_type).toBe("notion");
    expect(agent.getCallHistory()?.lastCall()?.searchParams).toEqual({ project_id: "p1" });
  });
});

describe("api client: retries", () => {
  it("retries a 429 after the delay its Retry-After asks for", async () => {
    const { pool, client, sleeps, attempts } = setup();
    pool
      .intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) })
      .reply(429, { detail: "slow down" }, { headers: { "retry-after": "7" } });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(sleeps).toEqual([7000]);
    expect(attempts.map((a) => a.code)).toEqual(["429", "200"]);
  });

  it("retries a 429 once the HTTP date its Retry-After names has come", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    vi.setSystemTime(new Date("2026-11-21T06:00:00.000Z"));
    const { pool, client, sleeps } = setup();
    pool
      .intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) })
      .reply(429, { detail: "slow down" }, { headers: { "retry-after": "Sat, 21 Nov 2026 06:00:12 GMT" } });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(sleeps).toEqual([12_000]);
  });

  it("retries a 429 without Retry-After with jittered exponential backoff", async () => {
    const { pool, client, sleeps } = setup({ random: () => 0.5, backoff: { baseMs: 1000 } });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(429, { detail: "slow down" });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(sleeps).toEqual([500]);
  });

  it("rides out a burst of 5xx and succeeds", async () => {
    const { pool, client, sleeps, attempts } = setup({ maxAttempts: 5 });
    for (const status of [500, 502, 503, 504]) {
      pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(status, "upstream trouble");
    }
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(sleeps).toEqual([250, 500, 1000, 2000]);
    expect(attempts.map((a) => a.code)).toEqual(["500", "502", "503", "504", "200"]);
  });

  it("retries a reset connection on a read", async () => {
    const { pool, client, attempts } = setup();
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).replyWithError(networkError("ECONNRESET"));
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(attempts.map((a) => a.code)).toEqual(["error", "200"]);
  });

  it("gives up after maxAttempts with UnavailableError carrying the last status and detail", async () => {
    const { pool, client, sleeps, attempts } = setup({ maxAttempts: 3 });
    pool
      .intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) })
      .reply(503, { detail: "maintenance" })
      .times(3);
    const error = (await caught(client.getRun(SYNC_ID))) as UnavailableError;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.code).toBe("API_UNAVAILABLE");
    expect(error.retryable).toBe(true);
    expect(error.status).toBe(503);
    expect(error.detail).toBe("maintenance");
    expect(error.message).toContain("3 attempts");
    expect(error.message).toContain("api.max_attempts");
    expect(attempts).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
  });

  it("gives up on network errors with the cause kept", async () => {
    const { pool, client } = setup({ maxAttempts: 2 });
    pool
      .intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) })
      .replyWithError(networkError("ECONNREFUSED"))
      .times(2);
    const error = (await caught(client.getRun(SYNC_ID))) as UnavailableError;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.status).toBeUndefined();
    expect(error.message).toContain("ECONNREFUSED");
    expect((error.cause as { code?: string }).code).toBe("ECONNREFUSED");
  });

  // A pass's failure waits for the next pass; a one-shot command (plan, apply, check) has none.
  it.each([
    { retriedBy: "next pass", next: "the next pass tries again" },
    { retriedBy: "operator", next: "run the command again once the service answers" },
  ] as const)("ends API_UNAVAILABLE with who tries again: $retriedBy", async ({ retriedBy, next }) => {
    const { pool, client } = setup({ maxAttempts: 1, retriedBy });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(503, { detail: "maintenance" });
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).replyWithError(networkError("ECONNREFUSED"));
    const busy = (await caught(client.getRun(SYNC_ID))) as UnavailableError;
    const closed = (await caught(client.getRun(SYNC_ID))) as UnavailableError;
    expect(busy.message).toMatch(/the service is unavailable or rate-limiting; /);
    expect(closed.message).toMatch(/nothing answers at /);
    for (const { message } of [busy, closed]) {
      expect(message).toContain(next);
      expect(message.match(/tries again|run the command again/g)).toHaveLength(1);
    }
  });

  it("retries an attempt that times out", async () => {
    const { pool, client, attempts } = setup({ timeoutMs: 20, maxAttempts: 2 });
    pool
      .intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) })
      .reply(200, runDetail())
      .delay(2_000);
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(200, runDetail());
    await client.getRun(SYNC_ID);
    expect(attempts.map((a) => a.code)).toEqual(["error", "200"]);
  });

  it.each([
    [400, BadRequestError],
    [422, BadRequestError],
    [404, NotFoundError],
  ])("does not retry a %i", async (status, ErrorClass) => {
    const { pool, client, attempts, sleeps } = setup();
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}`) }).reply(status, { detail: "no such thing" });
    const error = (await caught(client.getRun(SYNC_ID))) as BadRequestError;
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error.status).toBe(status);
    expect(error.detail).toBe("no such thing");
    expect(attempts).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });
});

describe("api client: status mapping", () => {
  it("maps 401 to UnauthorizedError naming the variable, never the token", async () => {
    const { pool, client } = setup();
    pool.intercept({ path: "/api/v1/projects" }).reply(401, { detail: `bad token ${TOKEN}` });
    const error = (await caught(client.listProjects())) as UnauthorizedError;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.message).toContain("$SYNCMIRROR_API_TOKEN");
    expect(error.message).toContain("create a new platform access token");
    expect(JSON.stringify({ message: error.message, detail: error.detail })).not.toContain(TOKEN);
  });

  it("maps a 403 about the premium feature to FeatureDisabledError", async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: "/api/v1/sync-task", method: "POST" })
      .reply(403, { detail: "Premium feature not enabled" });
    const error = (await caught(client.trigger({ sync_config_id: CONFIG_ID }))) as FeatureDisabledError;
    expect(error).toBeInstanceOf(FeatureDisabledError);
    expect(error.message).toContain("Administration > Premium Features");
    expect(error.detail).toBe("Premium feature not enabled");
  });

  it("maps a 409 saying the feature is disabled to FeatureDisabledError, not CannotStart", async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: "/api/v1/sync-task", method: "POST" })
      .reply(409, { detail: { message: "The Background Sync feature is disabled for this tenant" } });
    const error = await caught(client.trigger({ sync_config_id: CONFIG_ID }));
    expect(error).toBeInstanceOf(FeatureDisabledError);
  });

  it("maps another 403 to UnauthorizedError", async () => {
    const { pool, client } = setup();
    pool.intercept({ path: at(`/api/v1/sync-configs/${CONFIG_ID}`) }).reply(403, { detail: "not an admin" });
    const error = (await caught(client.getSyncConfig(CONFIG_ID))) as UnauthorizedError;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.status).toBe(403);
  });

  it("maps a trigger 409 to CannotStartError with the detail", async () => {
    const { pool, client, attempts } = setup();
    pool
      .intercept({ path: "/api/v1/sync-task", method: "POST" })
      .reply(409, { detail: "A sync is already running for this config" });
    const error = (await caught(client.trigger({ sync_config_id: CONFIG_ID }))) as CannotStartError;
    expect(error).toBeInstanceOf(CannotStartError);
    expect(error.code).toBe("API_CANNOT_START");
    expect(error.detail).toBe("A sync is already running for this config");
    expect(error.message).toContain("already running");
    expect(attempts).toHaveLength(1);
  });

  it("maps an export 409 to ConflictError keeping the per-source detail", async () => {
    const { pool, client } = setup();
    const detail = { message: "not finished", sources: [{ source: "github", status: "RUNNING" }] };
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}/export`) }).reply(409, { detail });
    const error = (await caught(client.getExportPage(SYNC_ID, { offset: 0, limit: 500 }))) as ConflictError;
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.route).toBe("/sync-task/{sync_id}/export");
    expect(error.detail).toEqual(detail);
  });

  it("scrubs the token from an error body that echoes it", async () => {
    const { pool, client } = setup({ maxAttempts: 1 });
    pool.intercept({ path: "/api/v1/projects" }).reply(502, `<pre>Authorization: Bearer ${TOKEN}</pre>`);
    const error = (await caught(client.listProjects())) as UnavailableError;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(JSON.stringify({ m: error.message, d: error.detail })).not.toContain(TOKEN);
    expect(String(error.detail)).toContain("[redacted]");
  });
});

describe("api client: non-idempotent POSTs", () => {
  it("does not retry a trigger reset after sending: TriggerOutcomeUnknownError after one attempt", async () => {
    const { pool, client, attempts, sleeps } = setup();
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).replyWithError(networkError("ECONNRESET"));
    const error = (await caught(client.trigger({ sync_config_id: CONFIG_ID }))) as TriggerOutcomeUnknownError;
    expect(error).toBeInstanceOf(TriggerOutcomeUnknownError);
    expect(error.code).toBe("API_TRIGGER_OUTCOME_UNKNOWN");
    expect(error.retryable).toBe(false);
    expect(error.message).toContain("adopt");
    expect(attempts).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("does not retry a trigger that timed out", async () => {
    const { pool, client, attempts } = setup({ timeoutMs: 20 });
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, triggerResponse()).delay(2_000);
    const error = await caught(client.trigger({ sync_config_id: CONFIG_ID }));
    expect(error).toBeInstanceOf(TriggerOutcomeUnknownError);
    expect(attempts).toHaveLength(1);
  });

  it("retries a trigger whose connection was refused (never sent)", async () => {
    const { pool, client, attempts } = setup();
    pool
      .intercept({ path: "/api/v1/sync-task", method: "POST" })
      .replyWithError(networkError("ECONNREFUSED"));
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, triggerResponse());
    await client.trigger({ sync_config_id: CONFIG_ID });
    expect(attempts.map((a) => a.code)).toEqual(["error", "201"]);
  });

  it("retries a trigger answered 429 or 503 (refused before any work)", async () => {
    const { pool, client, attempts, sleeps } = setup();
    pool
      .intercept({ path: "/api/v1/sync-task", method: "POST" })
      .reply(429, {}, { headers: { "retry-after": "2" } });
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(503, { detail: "busy" });
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, triggerResponse());
    await client.trigger({ sync_config_id: CONFIG_ID });
    expect(attempts.map((a) => a.code)).toEqual(["429", "503", "201"]);
    expect(sleeps).toEqual([2000, 500]);
  });

  it("treats a trigger answered 502 as outcome unknown, not retried", async () => {
    const { pool, client, attempts } = setup();
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(502, "bad gateway");
    const error = (await caught(client.trigger({ sync_config_id: CONFIG_ID }))) as TriggerOutcomeUnknownError;
    expect(error).toBeInstanceOf(TriggerOutcomeUnknownError);
    expect(error.status).toBe(502);
    expect(attempts).toHaveLength(1);
  });

  it("treats a trigger answered 201 with an unreadable body as outcome unknown", async () => {
    const { pool, client } = setup();
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, { trigger_id: "t" });
    const error = (await caught(client.trigger({ sync_config_id: CONFIG_ID }))) as TriggerOutcomeUnknownError;
    expect(error).toBeInstanceOf(TriggerOutcomeUnknownError);
    expect(error.cause).toBeInstanceOf(BadResponseError);
  });

  it("asks before every attempt of a trigger or continue, and sends nothing more once told no (a pass that lost its lease)", async () => {
    const { pool, client, attempts } = setup();
    const lost = new Error("the lease changed hands during the wait");
    let asked = 0;
    const hooks = {
      beforeAttempt: async () => {
        asked += 1;
        if (asked > 1) throw lost;
      },
    };
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(503, { detail: "busy" });
    expect(await caught(client.trigger({ sync_config_id: CONFIG_ID }, undefined, hooks))).toBe(lost);
    asked = 0;
    pool.intercept({ path: `/api/v1/sync-task/${SYNC_ID}/continue`, method: "POST" }).reply(500, "oops");
    expect(await caught(client.continueRun(SYNC_ID, { message: "go on" }, undefined, hooks))).toBe(lost);
    expect(
      attempts.map((a) => a.code),
      "one attempt each: no retry after the refusal",
    ).toEqual(["503", "500"]);
  });

  it("does not repeat a continue whose connection reset; retries it on 5xx", async () => {
    const { pool, client, attempts, agent } = setup();
    pool
      .intercept({ path: `/api/v1/sync-task/${SYNC_ID}/continue`, method: "POST" })
      .replyWithError(networkError("EPIPE"));
    const error = await caught(client.continueRun(SYNC_ID, { message: "go on" }));
    expect(error).toBeInstanceOf(ContinueOutcomeUnknownError);
    expect(attempts).toHaveLength(1);

    pool.intercept({ path: `/api/v1/sync-task/${SYNC_ID}/continue`, method: "POST" }).reply(500, "oops");
    pool.intercept({ path: `/api/v1/sync-task/${SYNC_ID}/continue`, method: "POST" }).reply(202, "");
    await client.continueRun(SYNC_ID, { message: "go on", source: "github" });
    expect(attempts.map((a) => a.code)).toEqual(["error", "500", "202"]);
    expect(JSON.parse(agent.getCallHistory()?.lastCall()?.body ?? "")).toEqual({
      message: "go on",
      source: "github",
    });
  });
});

describe("api client: pagination", () => {
  it("listAllRuns follows cursors 100 at a time", async () => {
    const { pool, client, agent } = setup();
    pool.intercept({ path: at("/api/v1/sync-task") }).reply(200, {
      items: [runListItem("r1"), runListItem("r2")],
      meta: { next_cursor: "c2", has_next: true },
    });
    pool
      .intercept({ path: at("/api/v1/sync-task") })
      .reply(200, { items: [runListItem("r3")], meta: { next_cursor: null, has_next: false } });
    const ids: string[] = [];
    for await (const run of client.listAllRuns({ sync_config_id: CONFIG_ID })) ids.push(run.sync_id);
    expect(ids).toEqual(["r1", "r2", "r3"]);
    const params = agent
      .getCallHistory()
      ?.calls()
      .map((c) => c.searchParams);
    expect(params).toEqual([
      { sync_config_id: CONFIG_ID, size: "100" },
      { sync_config_id: CONFIG_ID, size: "100", cursor: "c2" },
    ]);
  });

  it("listAllRuns fetches no further page once the caller stops", async () => {
    const { pool, client, attempts } = setup();
    pool.intercept({ path: at("/api/v1/sync-task") }).reply(200, {
      items: [runListItem("r1"), runListItem("r2")],
      meta: { next_cursor: "c2", has_next: true },
    });
    for await (const run of client.listAllRuns({ sync_config_id: CONFIG_ID })) {
      if (run.sync_id === "r1") break;
    }
    expect(attempts).toHaveLength(1);
  });

  it("listAccess gathers every page", async () => {
    const { pool, client } = setup();
    const user = (email: string) => ({ user_email: email, project_user: true, servers: [] });
    pool
      .intercept({ path: at(`/api/v1/sync-configs/${CONFIG_ID}/access`) })
      .reply(200, { items: [user("a@x")], meta: { next_cursor: "n1", has_next: true } });
    pool
      .intercept({ path: at(`/api/v1/sync-configs/${CONFIG_ID}/access`) })
      .reply(200, { items: [user("b@x")], meta: { next_cursor: null, has_next: false } });
    const items = await client.listAccess(CONFIG_ID);
    expect(items.map((i) => i.user_email)).toEqual(["a@x", "b@x"]);
  });

  it("refuses a page that claims more without a new cursor, rather than return a short list", async () => {
    const { pool, client } = setup();
    pool
      .intercept({ path: at(`/api/v1/sync-configs/${CONFIG_ID}/access`) })
      .reply(200, { items: [], meta: { next_cursor: null, has_next: true } });
    expect(await caught(client.listAccess(CONFIG_ID))).toBeInstanceOf(BadResponseError);
  });
});

describe("api client: abort and metrics", () => {
  it("stops waiting for a retry when the signal aborts", async () => {
    const controller = new AbortController();
    // The real sleep: a 300 s Retry-After that only the abort can cut short.
    const { pool, client, attempts } = setup({
      sleep: undefined,
      onRequest: (r) => {
        attempts.push(r);
        setImmediate(() => controller.abort());
      },
    });
    pool.intercept({ path: "/api/v1/projects" }).reply(503, {}, { headers: { "retry-after": "300" } });
    const error = await caught(client.listProjects(controller.signal));
    expect(error).toBeInstanceOf(AbortedError);
    expect(attempts).toHaveLength(1);
  });

  it("aborts a request in flight and does not retry", async () => {
    const controller = new AbortController();
    const { pool, client, sleeps } = setup();
    pool.intercept({ path: "/api/v1/projects" }).reply(200, []).delay(2_000);
    const pending = caught(client.listProjects(controller.signal));
    setImmediate(() => controller.abort());
    expect(await pending).toBeInstanceOf(AbortedError);
    expect(sleeps).toEqual([]);
  });

  it("marks an aborted trigger as possibly sent, so the caller adopts on resume", async () => {
    const controller = new AbortController();
    const { pool, client } = setup();
    pool.intercept({ path: "/api/v1/sync-task", method: "POST" }).reply(201, triggerResponse()).delay(2_000);
    const pending = caught(client.trigger({ sync_config_id: CONFIG_ID }, controller.signal));
    setImmediate(() => controller.abort());
    const error = (await pending) as AbortedError;
    expect(error).toBeInstanceOf(AbortedError);
    expect(error.cause).toBeInstanceOf(TriggerOutcomeUnknownError);
  });

  it("does not send anything when already aborted", async () => {
    const { client, attempts } = setup();
    expect(await caught(client.listProjects(AbortSignal.abort()))).toBeInstanceOf(AbortedError);
    expect(attempts).toEqual([]);
  });

  it("reports every attempt with a templated route and no ids", async () => {
    const { pool, client, attempts } = setup();
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}/export`) }).reply(500, "");
    pool.intercept({ path: at(`/api/v1/sync-task/${SYNC_ID}/export`) }).reply(200, exportPage());
    await client.getExportPage(SYNC_ID, { offset: 0, limit: 100 });
    expect(attempts.map(({ method, route, code }) => ({ method, route, code }))).toEqual([
      { method: "GET", route: "/sync-task/{sync_id}/export", code: "500" },
      { method: "GET", route: "/sync-task/{sync_id}/export", code: "200" },
    ]);
    for (const a of attempts) expect(a.durationSeconds).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(attempts)).not.toContain(SYNC_ID);
  });

  it("closes its own connection pool once", async () => {
    const client = createApiClient({
      baseUrl: "http://127.0.0.1:9/api/v1",
      token: TOKEN,
      timeoutMs: 1000,
      maxAttempts: 1,
      retriedBy: "operator",
      log: silentLogger(),
    });
    await client.close();
    await client.close();
  });
});
