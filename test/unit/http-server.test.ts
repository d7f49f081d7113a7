import { request } from "node:http";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createHttpServer, type HttpServer } from "../../src/http-server.js";
import { createMetrics } from "../../src/metrics.js";

const log = pino({ level: "silent" });
let server: HttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(
  overrides: { isReady?: () => boolean; getStatus?: () => unknown; token?: string; host?: string } = {},
) {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  server = createHttpServer({
    registry,
    isReady: overrides.isReady ?? (() => true),
    getStatus: overrides.getStatus ?? (() => ({ mirrors: [] })),
    token: overrides.token,
    log,
  });
  const { port } = await server.listen(overrides.host ?? "127.0.0.1", 0);
  return { base: `http://127.0.0.1:${port}`, metrics, registry };
}

describe("createHttpServer", () => {
  it("answers /healthz with 200 ok and forbids caching", async () => {
    const { base } = await serve();
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok\n");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("answers /readyz 503 until ready, then 200", async () => {
    let ready = false;
    const { base } = await serve({ isReady: () => ready });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it("serves the status object as JSON, awaiting it when it is a promise", async () => {
    const status = { mirrors: [{ name: "eng-wiki", liveResources: 12, inFlight: null }] };
    const { base } = await serve({ getStatus: async () => status });
    const res = await fetch(`${base}/status`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(status);
  });

  it("answers /status 500 with a generic body that never echoes the error", async () => {
    const { base } = await serve({
      getStatus: () => {
        throw new Error("cannot open /secrets/token-file");
      },
    });
    const res = await fetch(`${base}/status`);
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(body).not.toContain("secrets");
    expect(JSON.parse(body)).toEqual({
      error: { code: "INTERNAL", message: expect.stringMatching(/^status unavailable/) },
    });
  });

  it("serves the registry's metrics in Prometheus text format", async () => {
    const { base, metrics, registry } = await serve();
    metrics.resources.set({ mirror: "eng-wiki" }, 3);
    const res = await fetch(`${base}/metrics?scrape=1`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(registry.contentType);
    const text = await res.text();
    expect(text).toContain("# TYPE syncmirror_resources gauge");
    expect(text).toContain('syncmirror_resources{mirror="eng-wiki"} 3');
  });

  it("answers 404 for any other path", async () => {
    const { base } = await serve();
    for (const path of ["/", "/metrics/", "/status.json", "/../etc/passwd", "/debug/pprof"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.text()).toBe("not found\n");
    }
  });

  it("answers 405 with Allow for methods other than GET and HEAD", async () => {
    const { base } = await serve();
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
      const res = await fetch(`${base}/status`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
    }
  });

  it("answers HEAD with the headers and no body", async () => {
    const { base } = await serve();
    const res = await fetch(`${base}/healthz`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe("3");
    expect(await res.text()).toBe("");
  });

  it("closes promptly while a client holds a keep-alive connection, and closing twice is fine", {
    timeout: 3000,
  }, async () => {
    const { base } = await serve();
    const url = new URL(`${base}/healthz`);
    const agentResponse = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(url, { headers: { Connection: "keep-alive" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      });
      req.on("error", reject);
      req.end();
    });
    expect(agentResponse).toBe(200);
    await server?.close();
    await server?.close();
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it("closes /status to every caller on a non-loopback listener without a token; /metrics stays open", async () => {
    const { port } = new URL((await serve({ host: "0.0.0.0" })).base);
    const base = `http://127.0.0.1:${port}`;
    const res = await fetch(`${base}/status`, { headers: { Authorization: "Bearer anything" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await res.text()).toBe("unauthorized\n");
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it("requires the configured bearer token for /status, even on loopback", async () => {
    const { base } = await serve({ token: "s3cret-http-token" });
    const statusWith = async (authorization?: string) =>
      (await fetch(`${base}/status`, authorization ? { headers: { Authorization: authorization } } : {}))
        .status;
    expect(await statusWith()).toBe(401);
    expect(await statusWith("Bearer wrong")).toBe(401);
    expect(await statusWith("Bearer s3cret-http-token-and-more")).toBe(401);
    expect(await statusWith("Basic s3cret-http-token")).toBe(401);
    expect(await statusWith("Bearer s3cret-http-token")).toBe(200);
  });
});
