/**
 * `POST /v1/mirrors/{name}/pause`, `/resume` and `/trigger` (docs/console-history.md): the controls
 * of `mirror-controls.ts` over HTTP, answering the object the CLI prints with `--json`. Bearer
 * token always, even on loopback (never cookies); the actor recorded is `http` and the client's
 * address. `/trigger` takes an optional JSON body `{"mode": "full"}` (or `"incremental"`).
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

export function createControlRoutes(deps: ControlRoutesDeps): Route {
  return async (req: IncomingMessage): Promise<Reply | undefined> => {
    const match = PATH.exec(new URL(req.url ?? "/", "http://localhost").pathname);
    if (!match) return undefined;
    if (!isBearerAuthorized(req.headers.authorization, deps.token)) return unauthorizedReply();
    if (req.method !== "POST") return methodNotAllowedReply("POST");
    const name = mirrorOfPath(match[1] as string, deps.mirrors);
    if (typeof name !== "string") return name;
    const action = match[2] as "pause" | "resume" | "trigger";
    const body = await readBodyText(req);
    if (body === TOO_LARGE) return tooLargeReply();
    const mode = action === "trigger" ? parseMode(body) : undefined;
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
  let value: unknown;
  try {
    value = parseJsonBody(body, 'body: not JSON: send {"mode":"full"}, {"mode":"incremental"} or nothing');
  } catch (error) {
    return error as UsageError;
  }
  const parsed = TriggerBody.safeParse(value);
  if (!parsed.success) return new UsageError('body: mode: must be "incremental" or "full"');
  return parsed.data.mode;
}
