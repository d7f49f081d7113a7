/**
 * A request's small JSON body (the console's controls take a few fields at most): read up to a
 * limit, parsed, or a UsageError (400) saying what is wrong. No body at all reads as `{}`.
 */
import type { IncomingMessage } from "node:http";
import { UsageError } from "../errors.js";

const MAX_BODY_BYTES = 16 * 1024;

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new UsageError(`body: larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8").trim();
  if (text === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError("body: not JSON (send an object such as {} or no body)");
  }
}
