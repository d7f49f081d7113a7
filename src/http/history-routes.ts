/**
 * The console's history endpoints (docs/console-history.md), bearer token always, even on loopback
 * (they name users), never cookies: `GET /v1/passes`, `GET /v1/problems` and
 * `POST /v1/mirrors/{name}/approve-sweep`. Their JSON is the CLI's `--json` (`history`, `problems`,
 * `approve-sweep`), built by the same functions.
 */
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import { approveSweep } from "../console/approve-sweep.js";
import { buildHistory } from "../console/history.js";
import { parseHistoryParams, parseProblemParams } from "../console/params.js";
import { buildProblems } from "../console/problems.js";
import { queryParams } from "../consumers/params.js";
import { NothingHeldError, UsageError } from "../errors.js";
import { isBearerAuthorized } from "../http-auth.js";
import {
  errorReply,
  jsonReply as json,
  methodNotAllowedReply,
  notReadyReply,
  type Reply,
  type RouteHandler,
  unauthorizedReply,
} from "../http-server.js";
import type { Store } from "../store/store.js";
import { queryRefusal } from "./control-query.js";
import { readJsonBody, TOO_LARGE, tooLargeReply } from "./json-body.js";
import { mirrorOfPath } from "./path-mirror.js";

export interface HistoryRoutesDeps {
  /** The open store; undefined until the daemon has opened it. */
  store: () => Store | undefined;
  /** From the environment variable named by `http.token_env`. */
  token: string | undefined;
  mirrors: readonly string[];
  now?: () => Date;
}

export const HISTORY_PATHS = Object.freeze({ passes: "/v1/passes", problems: "/v1/problems" });
const APPROVE = /^\/v1\/mirrors\/([^/]+)\/approve-sweep$/;

/**
 * `{"by": "..."}`, optional: who approves, kept beside the client's address. Other keys are
 * ignored, as `/trigger` ignores them.
 */
const ApproveBody = z.object({ by: z.string().trim().min(1).max(200).optional() });

export function createHistoryRoutes(deps: HistoryRoutesDeps): RouteHandler {
  return async (req) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const approve = APPROVE.exec(url.pathname);
    const read = url.pathname === HISTORY_PATHS.passes || url.pathname === HISTORY_PATHS.problems;
    if (!read && !approve) return undefined;
    if (!isBearerAuthorized(req.headers.authorization, deps.token)) return unauthorizedReply();
    const allowed = read ? "GET, HEAD" : "POST";
    if (!allowed.split(", ").includes(req.method ?? "")) return methodNotAllowedReply(allowed);
    // As the other controls: a mirror not in the config is 404 whether or not the database is open.
    const mirror = approve ? mirrorOfPath(approve[1] ?? "", deps.mirrors) : undefined;
    if (mirror !== undefined && typeof mirror !== "string") return mirror;
    const refused = approve ? queryRefusal(url) : undefined;
    if (refused) return refused;
    const store = deps.store();
    if (store === undefined) return notReadyReply();
    try {
      if (mirror !== undefined) return await approveRoute(deps, store, req, mirror);
      const raw = queryParams(url.searchParams);
      if (url.pathname === HISTORY_PATHS.passes)
        return json(200, await buildHistory(store, deps.mirrors, parseHistoryParams(raw, deps.mirrors)));
      return json(200, await buildProblems(store, deps.mirrors, parseProblemParams(raw, deps.mirrors)));
    } catch (error) {
      if (error instanceof UsageError) return errorReply(400, error.code, error.message);
      if (error instanceof NothingHeldError) return errorReply(409, error.code, error.message);
      throw error;
    }
  };
}

async function approveRoute(
  deps: HistoryRoutesDeps,
  store: Store,
  req: IncomingMessage,
  mirror: string,
): Promise<Reply> {
  const raw = await readJsonBody(req);
  if (raw === TOO_LARGE) return tooLargeReply();
  const body = ApproveBody.safeParse(raw);
  if (!body.success) {
    const issue = body.error.issues[0];
    throw new UsageError(`body: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const from = `http ${req.socket.remoteAddress ?? "unknown address"}`;
  const by = body.data.by === undefined ? from : `${body.data.by} (${from})`;
  return json(200, await approveSweep(store, mirror, by, deps.now?.() ?? new Date()));
}
