/** Bearer-token check, JSON request bodies and JSON answers for the simulator's HTTP server. */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "./http-error.js";

const MAX_BODY_BYTES = 1024 * 1024;

export function isAuthorized(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1].trim());
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The parsed JSON body; undefined when empty; 413 past 1 MB; 422 when not JSON. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
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

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * Removes `field` (default: the first field) from an object, or from each object of an array. A
 * dotted path reaches into the body, `*` standing for every element of an array:
 * `items.*.servers` drops `servers` from each item of a page.
 */
export function dropField(body: unknown, field: string | undefined): unknown {
  const [head, ...rest] = field === undefined ? [undefined] : field.split(".");
  if (Array.isArray(body)) {
    if (head === "*") return body.map((item) => dropField(item, rest.join(".") || undefined));
    return body.map((item) => dropField(item, field));
  }
  if (typeof body !== "object" || body === null) return body;
  const copy = { ...(body as Record<string, unknown>) };
  const name = head ?? Object.keys(copy)[0] ?? "";
  if (rest.length === 0) delete copy[name];
  else if (name in copy) copy[name] = dropField(copy[name], rest.join("."));
  return copy;
}

const LIGHT_ITEM_FIELDS = ["id", "name", "created_at"];

/** A page whose items keep only the fields that identify them. */
export function withLightItems(body: unknown): unknown {
  if (typeof body !== "object" || body === null || !("items" in body) || !Array.isArray(body.items))
    return body;
  const items = body.items.map((item: Record<string, unknown>) =>
    Object.fromEntries(LIGHT_ITEM_FIELDS.filter((f) => f in item).map((f) => [f, item[f]])),
  );
  return { ...body, items };
}

/** Values a client keeps as they come (a resource's free-form parts, the export's side lists). */
const VERBATIM = new Set([
  "fields",
  "metadata",
  "relations",
  "attachments",
  "provenance",
  "excluded",
  "undecided",
  "unresolved_requests",
  "unmatched_tool_calls",
  "diagnostics",
  "detail",
]);

/** Every object of `body` with fields the API does not document, of several JSON types. */
export function withExtraFields(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withExtraFields);
  if (typeof body !== "object" || body === null) return body;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body))
    copy[key] = VERBATIM.has(key) ? value : withExtraFields(value);
  return {
    ...copy,
    x_added_later: { nested: [1, "two", null], flag: true },
    x_note: "new in a later release",
  };
}
