/**
 * The HTTP side: node:http on 127.0.0.1, bearer auth, JSON in and out, fault injection and the
 * request log. Routing and behaviour live in routes.ts and below.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { formatZuluIso } from "./clock.js";
import type { Fault, FaultController, FaultKind } from "./faults.js";
import { HttpError } from "./http-error.js";
import { matchRoute, type Reply, type Route } from "./router.js";

export const API_PREFIX = "/api/v1";
const MAX_BODY_BYTES = 1024 * 1024;

/** One request as the simulator saw it. The Authorization header is never recorded. */
export interface RequestLogEntry {
  method: string;
  /** Templated route ("/sync-task/{sync_id}/export"), or null when no route matched. */
  route: string | null;
  path: string;
  query: Record<string, string>;
  /** Null when the connection was destroyed without an answer (reset, drop-after) or not yet answered. */
  status: number | null;
  /** Simulator clock at arrival. */
  at: string;
  /** The injected fault, when one was applied. */
  fault?: FaultKind;
}

export interface HttpServerDeps {
  routes: readonly Route[];
  faults: FaultController;
  token: string;
  nowMs: () => number;
  log: (entry: RequestLogEntry) => void;
}

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

export async function listen(deps: HttpServerDeps, port: number): Promise<RunningServer> {
  const waits = new Set<() => void>();
  const server = createServer((req, res) => {
    handle(deps, req, res, waits).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { detail: `simulator error: ${String(error)}` });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const release of waits) release();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function handle(
  deps: HttpServerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  waits: Set<() => void>,
) {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const method = req.method ?? "GET";
  const path = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) || "/" : null;
  const match = path === null ? { kind: "none" as const } : matchRoute(deps.routes, method, path);
  const template =
    match.kind === "found" ? match.route.template : match.kind === "wrong-method" ? match.template : null;
  const entry: RequestLogEntry = {
    method,
    route: template,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    status: null,
    at: formatZuluIso(deps.nowMs()),
  };
  // Logged on arrival and completed before answering, so a client that got its answer sees it.
  deps.log(entry);
  const fault = deps.faults.take(`${method} ${template ?? url.pathname}`);
  if (fault) entry.fault = fault.kind;
  if (fault && (await answeredByFault(fault, req, res, entry, waits))) return;

  let reply: Reply;
  try {
    if (!isAuthorized(req.headers.authorization, deps.token)) throw new HttpError(401, "Not authenticated");
    if (match.kind === "none") throw new HttpError(404, "Not Found");
    if (match.kind === "wrong-method") throw new HttpError(405, "Method Not Allowed");
    const body = method === "POST" || method === "PUT" ? await readJson(req) : undefined;
    reply = match.route.handler({ params: match.params, query: entry.query, body });
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    reply = { status: error.status, body: { detail: error.detail } };
  }
  if (fault?.kind === "drop-after") {
    req.socket.destroy();
    return;
  }
  if (fault?.kind === "malformed") {
    entry.status = 200;
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"items": [{"sync_id": <html><body>upstream hiccup</body></html>');
    return;
  }
  if (fault?.kind === "missing-field" && reply.status < 300)
    reply = { ...reply, body: dropField(reply.body, fault.field) };
  entry.status = reply.status;
  if (reply.body === undefined) res.writeHead(reply.status).end();
  else sendJson(res, reply.status, reply.body);
}

/** Applies the faults that replace handling; returns true when the request is done. */
async function answeredByFault(
  fault: Fault,
  req: IncomingMessage,
  res: ServerResponse,
  entry: RequestLogEntry,
  waits: Set<() => void>,
): Promise<boolean> {
  switch (fault.kind) {
    case "reset":
      req.socket.destroy();
      return true;
    case "429": {
      entry.status = 429;
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) headers["retry-after"] = String(fault.retryAfterSeconds);
      sendJson(res, 429, { detail: "Too many requests" }, headers);
      return true;
    }
    case "500":
    case "502":
    case "503":
      entry.status = Number(fault.kind);
      sendJson(res, entry.status, { detail: `Injected ${fault.kind}` });
      return true;
    case "delay":
      await new Promise<void>((resolve) => {
        const release = () => {
          clearTimeout(timer);
          waits.delete(release);
          resolve();
        };
        const timer = setTimeout(release, fault.ms);
        waits.add(release);
      });
      return res.destroyed;
    default:
      return false;
  }
}

function isAuthorized(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1].trim());
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, "request body too large");
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(422, [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error" }]);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Removes `field` (default: the first field) from an object, or from each object of an array. */
function dropField(body: unknown, field: string | undefined): unknown {
  const strip = (value: unknown) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
    const copy = { ...(value as Record<string, unknown>) };
    delete copy[field ?? Object.keys(copy)[0] ?? ""];
    return copy;
  };
  return Array.isArray(body) ? body.map(strip) : strip(body);
}
