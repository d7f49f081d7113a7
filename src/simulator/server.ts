/**
 * The HTTP side: node:http on 127.0.0.1, bearer auth, JSON in and out, fault injection and the
 * request log. Routing and behaviour live in routes.ts and below.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { formatZuluIso } from "./clock.js";
import { notFinishedReply } from "./export.js";
import type { Fault, FaultController, FaultKind } from "./faults.js";
import { HttpError } from "./http-error.js";
import { dropField, isAuthorized, readJson, sendJson, withExtraFields, withLightItems } from "./http-io.js";
import type { Query } from "./paging.js";
import { matchRoute, type Reply, type Route, type RouteMatch } from "./router.js";

export const API_PREFIX = "/api/v1";
/** Test-infrastructure routes (admin.ts): outside the API, same token, never logged or faulted. */
export const ADMIN_PREFIX = "/_sim";

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
  /** API requests open at the server when this one arrived, itself included. */
  inFlight: number;
}

export interface HttpServerDeps {
  routes: readonly Route[];
  faults: FaultController;
  token: string;
  nowMs: () => number;
  log: (entry: RequestLogEntry) => void;
  /** Routes served under ADMIN_PREFIX (templates relative to it). */
  admin?: readonly Route[];
  /** Every API request waits this long (a timer) before it is handled: a remote service's round trip. */
  latencyMs?: number;
}

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

export async function listen(deps: HttpServerDeps, port: number): Promise<RunningServer> {
  const waits = new Set<() => void>();
  const open = { requests: 0 };
  const server = createServer((req, res) => {
    handle(deps, req, res, waits, open).catch((error: unknown) => {
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
  open: { requests: number },
) {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const method = req.method ?? "GET";
  const query = Object.fromEntries(url.searchParams);
  if (deps.admin && url.pathname.startsWith(`${ADMIN_PREFIX}/`)) {
    const match = matchRoute(deps.admin, method, url.pathname.slice(ADMIN_PREFIX.length));
    respond(res, await dispatch(deps.token, match, req, query));
    return;
  }
  const path = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) || "/" : null;
  const match: RouteMatch = path === null ? { kind: "none" } : matchRoute(deps.routes, method, path);
  const template =
    match.kind === "found" ? match.route.template : match.kind === "wrong-method" ? match.template : null;
  // Counted down in the same tick as the answer is handed to the socket, so a request a client
  // sends after reading an answer never finds that answer's request still open.
  open.requests++;
  try {
    await answer(deps, req, res, waits, match, {
      method,
      route: template,
      path: url.pathname,
      query,
      status: null,
      at: formatZuluIso(deps.nowMs()),
      inFlight: open.requests,
    });
  } finally {
    open.requests--;
  }
}

async function answer(
  deps: HttpServerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  waits: Set<() => void>,
  match: RouteMatch,
  entry: RequestLogEntry,
): Promise<void> {
  const { method, query } = entry;
  // Logged on arrival and completed before answering, so a client that got its answer sees it.
  deps.log(entry);
  if (deps.latencyMs) {
    await pause(deps.latencyMs, waits);
    if (res.destroyed) return;
  }
  const fault = deps.faults.take(`${method} ${entry.route ?? entry.path}`);
  if (fault) entry.fault = fault.kind;
  if (fault && (await answeredByFault(fault, req, res, entry, waits))) return;
  let reply = await dispatch(deps.token, match, req, query);
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
  if (fault?.kind === "missing-field" && reply.status < 300) {
    const fields = typeof fault.field === "string" || fault.field === undefined ? [fault.field] : fault.field;
    reply = { ...reply, body: fields.reduce((body, field) => dropField(body, field), reply.body) };
  }
  if (fault?.kind === "extra-fields" && reply.status < 300) {
    reply = { ...reply, body: withExtraFields(reply.body) };
  }
  if (fault?.kind === "light-items" && reply.status < 300)
    reply = { ...reply, body: withLightItems(reply.body) };
  if (fault?.kind === "not-finished" && reply.status < 300) reply = notFinishedReply(reply.body);
  if (fault?.kind === "date-filtered" && reply.status < 300) {
    reply = { ...reply, body: { ...(reply.body as Record<string, unknown>), since: fault.since } };
  }
  entry.status = reply.status;
  respond(res, reply);
}

/** Auth, route match, body, handler: the reply, with HttpErrors turned into `{detail}` answers. */
async function dispatch(
  token: string,
  match: RouteMatch,
  req: IncomingMessage,
  query: Query,
): Promise<Reply> {
  try {
    if (!isAuthorized(req.headers.authorization, token)) throw new HttpError(401, "Not authenticated");
    if (match.kind === "none") throw new HttpError(404, "Not Found");
    if (match.kind === "wrong-method") throw new HttpError(405, "Method Not Allowed");
    const body = req.method === "POST" || req.method === "PUT" ? await readJson(req) : undefined;
    return match.route.handler({ params: match.params, query, body });
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { status: error.status, body: { detail: error.detail } };
  }
}

function respond(res: ServerResponse, reply: Reply): void {
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
    case "429":
    case "500":
    case "502":
    case "503": {
      entry.status = Number(fault.kind);
      const detail = fault.kind === "429" ? "Too many requests" : `Injected ${fault.kind}`;
      sendJson(res, entry.status, { detail }, retryAfterHeader(fault));
      return true;
    }
    case "401":
      entry.status = 401;
      sendJson(res, 401, { detail: "Could not validate credentials" });
      return true;
    case "delay":
      await pause(fault.ms, waits);
      return res.destroyed;
    default:
      return false;
  }
}

/** The fault's `Retry-After`, in seconds or as an HTTP date; none when it gives no seconds. */
function retryAfterHeader(fault: {
  retryAfterSeconds?: number;
  retryAfterForm?: string;
}): Record<string, string> {
  const seconds = fault.retryAfterSeconds;
  if (seconds === undefined) return {};
  const value =
    fault.retryAfterForm === "http-date"
      ? new Date(Date.now() + seconds * 1000).toUTCString()
      : String(seconds);
  return { "retry-after": value };
}

/** A timer that `close()` releases early, so a closing server never waits out a delay. */
function pause(ms: number, waits: Set<() => void>): Promise<void> {
  return new Promise<void>((resolve) => {
    const release = () => {
      clearTimeout(timer);
      waits.delete(release);
      resolve();
    };
    const timer = setTimeout(release, ms);
    waits.add(release);
  });
}
