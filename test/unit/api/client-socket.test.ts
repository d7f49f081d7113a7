/**
 * The transport failures MockAgent can only imitate, on a real loopback socket: a refused
 * connection, a connection destroyed after the request was sent, a server that never answers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type ApiClient, createApiClient } from "../../../src/api/client.js";
import { TriggerOutcomeUnknownError, UnavailableError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listen(handler: Handler): Promise<{ server: Server; baseUrl: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, requests };
}

function client(baseUrl: string, timeoutMs = 5000, maxAttempts = 3): { api: ApiClient; codes: string[] } {
  const codes: string[] = [];
  const api = createApiClient({
    baseUrl,
    token: "tok-socket-test",
    timeoutMs,
    maxAttempts,
    retriedBy: "next pass",
    log: silentLogger(),
    sleep: async () => {},
    onRequest: (r) => codes.push(r.code),
  });
  cleanups.push(() => api.close());
  return { api, codes };
}

describe("api client on a real socket", () => {
  it("talks to a real server with the bearer token", async () => {
    const { baseUrl, requests } = await listen((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify([{ id: "p1" }]));
    });
    const { api } = client(baseUrl);
    expect(await api.listProjects()).toEqual([{ id: "p1" }]);
    expect(requests).toEqual(["GET /api/v1/projects Bearer tok-socket-test"]);
  });

  it("retries a refused connection, even for a trigger, then gives up", async () => {
    const { server, baseUrl } = await listen(() => {});
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { api, codes } = client(baseUrl);
    const error = await api.trigger({ sync_config_id: "c1" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as UnavailableError).message).toContain("ECONNREFUSED");
    expect(codes).toEqual(["error", "error", "error"]);
  });

  it("does not repeat a trigger whose connection was destroyed after sending", async () => {
    const { baseUrl, requests } = await listen((req) => req.socket.destroy());
    const { api, codes } = client(baseUrl);
    const error = await api.trigger({ sync_config_id: "c1" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TriggerOutcomeUnknownError);
    expect(codes).toEqual(["error"]);
    expect(requests).toHaveLength(1);
  });

  it("times out a server that never answers, and retries a read", async () => {
    const { baseUrl, requests } = await listen(() => {});
    const { api } = client(baseUrl, 250, 2);
    const error = await api.getRun("r1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as UnavailableError).message).toContain("timeout after 250 ms");
    expect(requests).toHaveLength(2);
  });
});
