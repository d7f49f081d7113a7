/**
 * A control's small request body (a few fields at most): read up to a limit, then parsed. A body
 * over the limit is `TOO_LARGE` (413 on every control, `tooLargeReply`); text that is not JSON is a
 * UsageError (400) saying what is wrong. No body at all reads as `{}`.
 */
import type { IncomingMessage } from "node:http";
import { UsageError } from "../errors.js";
import { errorReply, type Reply } from "../http-server.js";

/** A control's body is a few bytes; anything much larger is not one. */
export const MAX_BODY_BYTES = 4096;

/** What the readers answer for a body over `MAX_BODY_BYTES`. */
export const TOO_LARGE: unique symbol = Symbol("body too large");

/** The body as text, or TOO_LARGE (read no further). */
export async function readBodyText(req: IncomingMessage): Promise<string | typeof TOO_LARGE> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return TOO_LARGE;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const body = await readBodyText(req);
  if (body === TOO_LARGE) return TOO_LARGE;
  return parseJsonBody(body, "body: not JSON (send an object such as {} or no body)");
}

/** A body's text as JSON, `{}` when blank; text that is not JSON throws UsageError(`notJson`). */
export function parseJsonBody(body: string, notJson: string): unknown {
  const text = body.trim();
  if (text === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError(notJson);
  }
}

export function tooLargeReply(): Reply {
  return errorReply(413, "BODY_TOO_LARGE", `the body may hold at most ${MAX_BODY_BYTES} bytes`);
}
