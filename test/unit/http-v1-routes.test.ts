/**
 * The `/v1/` routes' answers that come before any database work (docs/reference/http.md): a
 * client's mistakes in the path, method or body get a JSON answer saying what is wrong, never a
 * 500 and a logged stack.
 */
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createControlRoutes } from "../../src/http/control-routes.js";
import { createHistoryRoutes } from "../../src/http/history-routes.js";
import { createHttpServer, type HttpServer } from "../../src/http-server.js";

const TOKEN = "s3cret-http-token";
let server: HttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server with the console's routes and no database open yet. */
async function serve(): Promise<{
  post: (path: string, body?: string) => Promise<Answer>;
  send: (path: string, init?: { method?: string; token?: string | null }) => Promise<Answer>;
}> {
  const mirrors = ["eng-wiki"];
  const deps = { token: TOKEN, mirrors };
  server = createHttpServer({
    registry: new Registry(),
    isReady: () => false,
    getStatus: () => undefined,
    token: TOKEN,
    routes: [
      createControlRoutes({ ...deps, source: () => undefined, onChange: () => {} }),
      createHistoryRoutes({ ...deps, store: () => undefined }),
    ],
    log: pino({ level: "silent" }),
  });
  const { port } = await server.listen("127.0.0.1", 0);
  const send = async (path: string, init: { method?: string; token?: string | null; body?: string } = {}) => {
    const token = init.token === undefined ? TOKEN : init.token;
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: init.method ?? "GET",
      headers: token === null ? {} : { Authorization: `Bearer ${token}` },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    return { status: res.status, type: res.headers.get("content-type"), json: await res.json() };
  };
  return {
    send,
    post: (path, body) => send(path, { method: "POST", ...(body === undefined ? {} : { body }) }),
  };
}

interface Answer {
  status: number;
  type: string | null;
  json: unknown;
}

describe("the /v1/ routes", () => {
  it("answer a mirror name that is not valid percent-encoding 404, naming no mirror, not 500", async () => {
    const { post } = await serve();
    for (const action of ["pause", "resume", "trigger", "approve-sweep"]) {
      const answer = await post(`/v1/mirrors/%E0%A4%A/${action}`);
      expect(answer, action).toMatchObject({
        status: 404,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(JSON.stringify(answer.json), action).toMatch(/eng-wiki/);
    }
  });
});

describe("the /v1/ errors", () => {
  it("are the CLI's --json failure document, { error: { code, message } }, whatever went wrong", async () => {
    const { post, send } = await serve();
    const cases: [string, () => Promise<Answer>, number, string, RegExp][] = [
      ["no token", () => send("/v1/passes", { token: null }), 401, "UNAUTHORIZED", /bearer token/],
      ["unknown path", () => send("/v1/nothing"), 404, "NOT_FOUND", /\/v1\/nothing/],
      ["unknown mirror", () => post("/v1/mirrors/nope/pause"), 404, "NOT_FOUND", /"nope".*eng-wiki/],
      ["wrong method", () => send("/v1/mirrors/eng-wiki/pause"), 405, "METHOD_NOT_ALLOWED", /POST/],
      ["wrong method", () => send("/v1/passes", { method: "POST" }), 405, "METHOD_NOT_ALLOWED", /GET/],
      ["bad mode", () => post("/v1/mirrors/eng-wiki/trigger", '{"mode":"x"}'), 400, "USAGE", /mode/],
      ["bad body", () => post("/v1/mirrors/eng-wiki/trigger", "{"), 400, "USAGE", /not JSON/],
      ["bad body", () => post("/v1/mirrors/eng-wiki/pause", "{"), 400, "USAGE", /not JSON/],
      ["bad body", () => post("/v1/mirrors/eng-wiki/resume", "yes"), 400, "USAGE", /not JSON/],
      [
        "huge body",
        () => post("/v1/mirrors/eng-wiki/pause", "x".repeat(70_000)),
        413,
        "BODY_TOO_LARGE",
        /bytes/,
      ],
      ["no database", () => post("/v1/mirrors/eng-wiki/pause"), 503, "NOT_READY", /database/],
      ["no database", () => send("/v1/problems"), 503, "NOT_READY", /database/],
    ];
    for (const [what, ask, status, code, message] of cases) {
      const answer = await ask();
      expect(answer, what).toEqual({
        status,
        type: "application/json; charset=utf-8",
        json: { error: { code, message: expect.stringMatching(message) } },
      });
    }
  });
});
