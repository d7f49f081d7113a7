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
async function serve(): Promise<{ post: (path: string, body?: string) => Promise<Answer> }> {
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
  return {
    async post(path, body) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}` },
        ...(body === undefined ? {} : { body }),
      });
      return { status: res.status, type: res.headers.get("content-type"), json: await res.json() };
    },
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
