/**
 * `POST /v1/mirrors/{name}/pause`, `/resume` and `/trigger` (docs/console-history.md): the controls
 * of `mirror-controls.ts` over HTTP, answering the object the CLI prints with `--json`. Bearer
 * token always, even on loopback (never cookies); the actor recorded is `http` and the client's
 * address. `/trigger` takes an optional JSON body `{"mode": "full"}` (or `"incremental"`); `/pause`
 * and `/resume` none, or a JSON object whose keys they ignore. No control takes a query parameter.
 */
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { isBearerAuthorized } from "../http-auth.js";
import {
  errorReply,
  jsonReply as json,
  methodNotAllowedReply,
  notReadyReply,
  type Reply,
  type Route,
  unauthorizedReply,
} from "../http-server.js";
import { applyControl } from "../mirror-controls.js";
import type { Store } from "../store/store.js";
import { MODES } from "../store/types.js";
import { queryRefusal } from "./control-query.js";
import { parseJsonBody, readBodyText, TOO_LARGE, tooLargeReply } from "./json-body.js";
import { mirrorOfPath } from "./path-mirror.js";

export interface ControlRoutesDeps {
  /** The open store; undefined until the daemon has opened it. */
  source: () => Store | undefined;
  /** From the environment variable named by `http.token_env`. */
  token: string | undefined;
  mirrors: readonly string[];
  /** After a control changed something: the daemon looks at its schedule again. */
  onChange: () => void;
}

const PATH = /^\/v1\/mirrors\/([^/]+)\/(pause|resume|trigger)$/;
const TriggerBody = z.object({ mode: z.enum(MODES).optional() });
const EmptyBody = z.object({});

export function createControlRoutes(deps: ControlRoutesDeps): Route {
  return async (req: IncomingMessage): Promise<Reply | undefined> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const match = PATH.exec(url.pathname);
    if (!match) return undefined;
    if (!isBearerAuthorized(req.headers.authorization, deps.token)) return unauthorizedReply();
    if (req.method !== "POST") return methodNotAllowedReply("POST");
    const name = mirrorOfPath(match[1] as string, deps.mirrors);
    if (typeof name !== "string") return name;
    const refused = queryRefusal(url);
    if (refused) return refused;
    const action = match[2] as "pause" | "resume" | "trigger";
    const body = await readBodyText(req);
    if (body === TOO_LARGE) return tooLargeReply();
    // pause and resume read nothing from the body, but one that is not a JSON object is a client's
    // mistake all the same (a trigger's mode sent to the wrong path, say): refused, nothing recorded.
    const mode = action === "trigger" ? parseMode(body) : parseEmpty(body);
    if (mode instanceof UsageError) return errorReply(400, mode.code, mode.message);
    const store = deps.source();
    if (store === undefined) return notReadyReply();
    const reply = await applyControl(store, {
      mirror: name,
      action,
      ...(mode === undefined ? {} : { mode }),
      actor: `http ${req.socket.remoteAddress ?? "unknown"}`,
      now: new Date(),
    });
    if (reply.changed) deps.onChange();
    return json(200, action === "trigger" ? { ...reply, pass: null } : reply);
  };
}

function parseMode(body: string): "incremental" | "full" | undefined | UsageError {
  const value = parseBody(body, 'body: not JSON: send {"mode":"full"}, {"mode":"incremental"} or nothing');
  if (value instanceof UsageError) return value;
  const parsed = TriggerBody.safeParse(value);
  if (!parsed.success) return new UsageError('body: mode: must be "incremental" or "full"');
  return parsed.data.mode;
}

/** pause and resume take no fields: undefined for no body or an object (its keys ignored). */
function parseEmpty(body: string): undefined | UsageError {
  const value = parseBody(body, "body: not JSON: send {} or nothing");
  if (value instanceof UsageError) return value;
  if (!EmptyBody.safeParse(value).success)
    return new UsageError("body: must be a JSON object ({}) or nothing");
  return undefined;
}

function parseBody(body: string, notJson: string): unknown {
  try {
    return parseJsonBody(body, notJson);
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
}
