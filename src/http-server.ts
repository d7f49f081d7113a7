/**
 * The daemon's HTTP endpoints (docs/reference/http.md): `/metrics`, `/healthz`, `/readyz`, `/status`, and the
 * `/v1/` routes of other modules (consumers, controls), tried in order, and the console's page at
 * `/` (no data: served without the token; its script sends it). GET and HEAD everywhere;
 * POST only under `/v1/` (the controls), where every request needs the bearer token, even on
 * loopback, before any route sees it. No response ever carries an internal error message (it
 * could name a file path or echo a secret). `/status` names users, so it needs the bearer token,
 * or, when none is configured, a loopback listener.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, isIPv4 } from "node:net";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { stringifyExact } from "./exact-json.js";
import { isBearerAuthorized } from "./http-auth.js";
import { listenError } from "./listen-error.js";

export interface HttpServerDeps {
  registry: Registry;
  /** True once the database is migrated and the config loaded. */
  isReady: () => boolean;
  /** The `status --json` object; undefined until the database is open (answered 503, as `/readyz`). */
  getStatus: () => unknown | Promise<unknown>;
  /** Bearer token for `/status`; undefined when none is configured. */
  token: string | undefined;
  /** Routes under `/v1/`, tried in order: each answers with a reply, or undefined for a path it does not serve. */
  routes?: readonly Route[];
  /** The console's page and assets (outside `/v1/`): a reply for its paths, undefined for others. */
  page?: RouteHandler;
  log: Logger;
}

/** One module's routes: a reply for the paths it serves, undefined for any other. */
export type Route = (req: IncomingMessage) => Promise<Reply | undefined>;

/** The prefix of the API routes: bearer token always, and the only place POST is served. */
export const API_PREFIX = "/v1/";

/** The paths served here; deploy/ files are checked against them (liveness, readiness, scraping). */
export const HTTP_PATHS = Object.freeze({
  metrics: "/metrics",
  healthz: "/healthz",
  readyz: "/readyz",
  status: "/status",
});

export interface HttpServer {
  /**
   * Starts listening; resolves with the bound port (useful with port 0) and whether the address
   * bound is a loopback one. `from` names where the address came from in a failure's message
   * (`http.listen`, or `$SYNCMIRROR_HTTP_LISTEN`).
   */
  listen(host: string, port: number, from?: string): Promise<{ port: number; loopback: boolean }>;
  /** Stops accepting, closes keep-alive connections, resolves once the server is closed. */
  close(): Promise<void>;
}

/** Answers the requests it owns; undefined for the others. */
export type RouteHandler = (req: IncomingMessage) => Promise<Reply | undefined>;

export interface Reply {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

const TEXT = "text/plain; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
/** How long a request already being answered may take to finish once close() is called. */
const CLOSE_GRACE_MS = 1000;

export function createHttpServer(deps: HttpServerDeps): HttpServer {
  const access = { loopback: false };
  const server = createServer((req, res) => {
    route(deps, req, access.loopback)
      .catch((err: unknown): Reply => {
        requestFailed(deps, req, err);
        return text(500, "internal error");
      })
      .then((reply) => send(req, res, reply))
      .catch((err: unknown) => {
        deps.log.error({ err }, "http response failed");
        res.destroy();
      });
  });

  return {
    listen(host, port, from = "http.listen") {
      return new Promise((resolve, reject) => {
        const fail = (cause: NodeJS.ErrnoException) => reject(listenError(host, port, from, cause));
        server.once("error", fail);
        server.listen(port, host, () => {
          server.off("error", fail);
          const bound = server.address() as AddressInfo;
          // The address bound, not its spelling: `LOCALHOST`, `[0:0:0:0:0:0:0:1]` and
          // `[::ffff:127.0.0.1]` are loopback too, and a name is only what it resolves to.
          access.loopback = isLoopback(bound.address);
          resolve({ port: bound.port, loopback: access.loopback });
        });
      });
    },
    close() {
      if (!server.listening) return Promise.resolve();
      return new Promise((resolve) => {
        // A request still being answered gets a short grace; idle keep-alive sockets go now,
        // so a scraper's open connection never holds shutdown up.
        const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
    },
  };
}

async function route(deps: HttpServerDeps, req: IncomingMessage, loopback: boolean): Promise<Reply> {
  const path = pathOf(req);
  if (path.startsWith(API_PREFIX)) return apiRoute(deps, req);
  if (req.method !== "GET" && req.method !== "HEAD") {
    return { ...text(405, "method not allowed"), headers: { Allow: "GET, HEAD" } };
  }
  switch (path) {
    case HTTP_PATHS.metrics:
      return { status: 200, contentType: deps.registry.contentType, body: await deps.registry.metrics() };
    case HTTP_PATHS.healthz:
      // Answering at all is the proof: the process is alive and its event loop turns.
      return text(200, "ok");
    case HTTP_PATHS.readyz:
      return deps.isReady() ? text(200, "ready") : text(503, "not ready");
    case HTTP_PATHS.status:
      if (!mayReadUsers(deps.token, req.headers.authorization, loopback)) {
        return { ...text(401, "unauthorized"), headers: { "WWW-Authenticate": 'Bearer realm="syncmirror"' } };
      }
      return status(deps);
    default:
      return (await deps.page?.(req)) ?? text(404, "not found");
  }
}

async function apiRoute(deps: HttpServerDeps, req: IncomingMessage): Promise<Reply> {
  if (!isBearerAuthorized(req.headers.authorization, deps.token)) return unauthorizedReply();
  try {
    for (const r of deps.routes ?? []) {
      const reply = await r(req);
      if (reply) return reply;
    }
  } catch (err) {
    // Logged here with its detail; the client gets the same JSON shape as every other /v1/ error.
    requestFailed(deps, req, err);
    if (!deps.isReady()) return databaseLostReply();
    return errorReply(500, "INTERNAL", "internal error: the daemon's log says what failed");
  }
  return errorReply(404, "NOT_FOUND", `no endpoint ${pathOf(req)}: docs/reference/http.md lists them`);
}

/**
 * A request that failed: an error of the daemon's, unless the client hung up before its request was
 * read to the end (a control's body cut short), which is the client's doing and no fault to alert on.
 */
function requestFailed(deps: HttpServerDeps, req: IncomingMessage, err: unknown): void {
  if (req.destroyed && !req.complete)
    deps.log.debug({ path: pathOf(req) }, "http client hung up before its request was read to the end");
  else deps.log.error({ err, path: pathOf(req) }, "http request failed");
}

/** A JSON reply, the shape every `/v1/` route answers with. */
export function jsonReply(status: number, body: unknown): Reply {
  return { status, contentType: JSON_TYPE, body: `${stringifyExact(body)}\n` };
}

/**
 * A JSON error: `{"error": {"code", "message"}}`, the document a `--json` command prints when it
 * fails (SPEC: the endpoints' JSON shapes are the CLI's), so one parser reads both.
 */
export function errorReply(
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
): Reply {
  return {
    ...jsonReply(status, { error: { code, message } }),
    ...(headers === undefined ? {} : { headers }),
  };
}

/** Without the right bearer token: this and nothing else, whatever the path or input. */
export function unauthorizedReply(): Reply {
  const message =
    "unauthorized: send the bearer token (Authorization: Bearer <the value of the variable http.token_env names>)";
  return errorReply(401, "UNAUTHORIZED", message, { "WWW-Authenticate": "Bearer" });
}

/** A method the path does not serve. */
export function methodNotAllowedReply(allow: string): Reply {
  return errorReply(405, "METHOD_NOT_ALLOWED", `this path answers ${allow} only`, { Allow: allow });
}

/** A route asked before the daemon opened its database. */
export function notReadyReply(): Reply {
  return errorReply(
    503,
    "NOT_READY",
    "not ready: the database is not open yet (/readyz answers 200 once it is)",
  );
}

/** A request that failed while the daemon is not ready (the database stopped answering): retry later. */
function databaseLostReply(): Reply {
  return errorReply(
    503,
    "NOT_READY",
    "not ready: the database does not answer now; retry later (/readyz answers 200 once it does)",
  );
}

async function status(deps: HttpServerDeps): Promise<Reply> {
  try {
    const report = await deps.getStatus();
    if (report === undefined) return notReadyReply();
    return { status: 200, contentType: JSON_TYPE, body: JSON.stringify(report) };
  } catch (err) {
    deps.log.error({ err }, "building /status failed");
    if (!deps.isReady()) return databaseLostReply();
    return errorReply(500, "INTERNAL", "status unavailable: the daemon's log says why");
  }
}

/** With a token configured it is always required; without one, only a loopback listener is open. */
function mayReadUsers(
  token: string | undefined,
  authorization: string | undefined,
  loopback: boolean,
): boolean {
  if (token !== undefined && token !== "") return isBearerAuthorized(authorization, token);
  return loopback;
}

/**
 * A bound address (as `server.address()` gives it) only processes on this host can connect to:
 * `127.0.0.0/8`, `::1`, or `127.0.0.0/8` mapped into IPv6 (`::ffff:127.0.0.1`).
 */
export function isLoopback(address: string): boolean {
  const v4 = address.toLowerCase().startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  if (isIPv4(v4)) return v4.startsWith("127.");
  return address === "::1";
}

function send(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  res.writeHead(reply.status, {
    "Content-Type": reply.contentType,
    "Content-Length": Buffer.byteLength(reply.body),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...reply.headers,
  });
  res.end(req.method === "HEAD" ? undefined : reply.body);
}

function text(status: number, body: string): Reply {
  return { status, contentType: TEXT, body: `${body}\n` };
}

/** The path without the query string; exact match only, so `/metrics/` is not `/metrics`. */
function pathOf(req: IncomingMessage): string {
  return (req.url ?? "/").split("?", 1)[0] ?? "";
}
