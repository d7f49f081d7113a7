/**
 * A loopback HTTP proxy in front of the simulator that can rewrite the raw bytes of export pages:
 * for hostile content the simulator's own JSON serializer cannot produce (nesting deeper than
 * V8's JSON.stringify allows, invalid UTF-8 bytes, keys of any shape, resources of the wrong
 * shape), the run list's answers (items missing a field the service may leave out), and the
 * trigger's answers (a skip reason the service may add later); it also answers requests itself
 * (an error echoing the request's credentials) and can replace the answer to a trigger the service
 * handled with a gateway's 5xx, or hold a trigger past the client's timeout. Test infrastructure only; the simulator stays an independent
 * reading of the service's API.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { onTestFinished } from "vitest";
import { createHarness, type Harness, type HarnessOptions } from "./mirror-harness.js";

export type Rewrite = (body: string) => string | Buffer;

export interface ProxyAnswer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export interface RewritingProxy {
  /** Base URL to put in the config (`.../api/v1`). */
  baseUrl: string;
  /** Where requests go; set once the simulator is up. */
  target: string;
  /**
   * `rewrites[i]` rewrites the i-th page (offset i x limit) of an export, once. Keyed by page and
   * not by arrival order because the mirror reads pages ahead concurrently and their responses
   * race.
   */
  rewrites: (Rewrite | undefined)[];
  /** Export page bodies as served to the mirror, after any rewrite. */
  served: Buffer[];
  /** Rewrites every 200 answer to the run list (`GET /sync-task`), while set. */
  runList?: Rewrite;
  /** Rewrites every 2xx answer to the trigger (`POST /sync-task`), while set. */
  trigger?: Rewrite;
  /** Rewrites every 200 answer to a run's detail (`GET /sync-task/{sync_id}`), while set. */
  runDetail?: Rewrite;
  /**
   * Answers a request in the service's place, before it reaches it, when it returns an answer:
   * errors the simulator does not write, such as a body echoing the request's credentials.
   */
  intercept?: (request: { method: string; path: string; authorization: string }) => ProxyAnswer | undefined;
  /** The next trigger the service handles is answered with this status instead (a gateway that lost the answer); once. */
  triggerLostWith?: number;
  /**
   * The next trigger reaches the service only this many ms after it arrived, and does even when the
   * client stopped waiting: a slow service that still acts on a request whose client timed out; once.
   */
  triggerHeldMs?: number;
  close(): Promise<void>;
}

const EXPORT_PATH = /\/sync-task\/[^/]+\/export$/;
const SYNC_TASK_PATH = /^\/sync-task$/;
const RUN_PATH = /^\/sync-task\/[^/]+$/;

export async function startRewritingProxy(): Promise<RewritingProxy> {
  const proxy: RewritingProxy = {
    baseUrl: "",
    target: "",
    rewrites: [],
    served: [],
    close: () => Promise.resolve(),
  };
  const server = createServer((req, res) => {
    forward(proxy, req).then(
      ({ status, headers, body }) => {
        res.writeHead(status, { ...headers, "content-length": String(body.length) });
        res.end(body);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
  proxy.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return proxy;
}

/** A harness whose API requests go through a rewriting proxy; the proxy closes when the test finishes. */
export async function proxiedHarness(
  options: HarnessOptions = {},
): Promise<{ h: Harness; proxy: RewritingProxy }> {
  const proxy = await startRewritingProxy();
  onTestFinished(() => proxy.close());
  const h = await createHarness({ ...options, api: { ...options.api, base_url: proxy.baseUrl } });
  proxy.target = h.sim.baseUrl;
  return { h, proxy };
}

async function forward(
  proxy: RewritingProxy,
  req: IncomingMessage,
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const path = (req.url ?? "/").replace(/^\/api\/v1/, "");
  const authorization = req.headers.authorization ?? "";
  const intercepted = proxy.intercept?.({ method: req.method ?? "GET", path, authorization });
  if (intercepted) {
    const headers = { "content-type": "application/json", ...intercepted.headers };
    return { status: intercepted.status, headers, body: Buffer.from(intercepted.body, "utf8") };
  }
  const route = path.split("?")[0] ?? "";
  if (proxy.triggerHeldMs !== undefined && req.method === "POST" && SYNC_TASK_PATH.test(route)) {
    const ms = proxy.triggerHeldMs;
    proxy.triggerHeldMs = undefined;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }
  const upstream = await fetch(`${proxy.target}${path}`, {
    method: req.method,
    headers: {
      authorization,
      "content-type": req.headers["content-type"] ?? "application/json",
    },
    body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
  });
  let body: Buffer = Buffer.from(await upstream.arrayBuffer());
  const headers: Record<string, string> = { "content-type": "application/json" };
  const retryAfter = upstream.headers.get("retry-after");
  if (retryAfter) headers["retry-after"] = retryAfter;
  if (proxy.triggerLostWith !== undefined && req.method === "POST" && SYNC_TASK_PATH.test(route)) {
    const status = proxy.triggerLostWith;
    proxy.triggerLostWith = undefined;
    return {
      status,
      headers: { "content-type": "text/html" },
      body: Buffer.from("<html>bad gateway</html>"),
    };
  }
  const rewrite =
    upstream.status === 200 && req.method === "GET" && SYNC_TASK_PATH.test(route)
      ? proxy.runList
      : upstream.ok && req.method === "POST" && SYNC_TASK_PATH.test(route)
        ? proxy.trigger
        : upstream.status === 200 && req.method === "GET" && RUN_PATH.test(route)
          ? proxy.runDetail
          : undefined;
  if (rewrite) {
    const out = rewrite(body.toString("utf8"));
    body = typeof out === "string" ? Buffer.from(out, "utf8") : out;
  }
  if (upstream.status === 200 && EXPORT_PATH.test(path.split("?")[0] ?? "")) {
    const page = pageIndex(path);
    const rewrite = proxy.rewrites[page];
    if (rewrite) {
      proxy.rewrites[page] = undefined;
      const out = rewrite(body.toString("utf8"));
      body = typeof out === "string" ? Buffer.from(out, "utf8") : out;
    }
    proxy.served.push(body);
  }
  return { status: upstream.status, headers, body };
}

function pageIndex(path: string): number {
  const query = new URLSearchParams(path.split("?")[1] ?? "");
  const limit = Number(query.get("limit") ?? 100);
  return Math.floor(Number(query.get("offset") ?? 0) / limit);
}
