/** Query parsing for page sizes, offsets and opaque cursors. */
import { HttpError } from "./http-error.js";

export type Query = Readonly<Record<string, string>>;

/** An integer query parameter within [min, max], or the default when absent; 400 otherwise. */
export function intParam(query: Query, name: string, fallback: number, min: number, max: number): number {
  const raw = query[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new HttpError(400, `${name} must be an integer between ${min} and ${max}`);
  }
  return value;
}

export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** Decodes a cursor this service issued; 400 for anything else. */
export function decodeCursor<T>(
  raw: string | undefined,
  isValid: (value: unknown) => value is T,
): T | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
    if (isValid(value)) return value;
  } catch {
    // fall through to the 400 below
  }
  throw new HttpError(400, "cursor is not valid");
}

export interface PageMeta {
  size: number;
  total: number;
  next_cursor: string | null;
  has_next: boolean;
  has_prev: boolean;
}

/** Keyset paging over items already sorted newest first; the cursor is the last item's position. */
export function keysetPage<T extends { createdAtMs: number; seq: number }>(
  sorted: readonly T[],
  query: Query,
  defaultSize: number,
): { items: T[]; meta: PageMeta } {
  const size = intParam(query, "size", defaultSize, 1, 100);
  const after = decodeCursor(query.cursor, isPosition);
  const start = after ? sorted.findIndex((item) => isOlder(item, after)) : 0;
  const from = start < 0 ? sorted.length : start;
  const items = sorted.slice(from, from + size);
  const last = items.at(-1);
  const hasNext = from + size < sorted.length;
  return {
    items,
    meta: {
      size,
      total: sorted.length,
      next_cursor: hasNext && last ? encodeCursor({ t: last.createdAtMs, s: last.seq }) : null,
      has_next: hasNext,
      has_prev: from > 0,
    },
  };
}

/** Newest first: later created_at, then later creation order. */
export function newestFirst(
  a: { createdAtMs: number; seq: number },
  b: { createdAtMs: number; seq: number },
) {
  return b.createdAtMs - a.createdAtMs || b.seq - a.seq;
}

function isOlder(item: { createdAtMs: number; seq: number }, position: { t: number; s: number }): boolean {
  return item.createdAtMs < position.t || (item.createdAtMs === position.t && item.seq < position.s);
}

function isPosition(value: unknown): value is { t: number; s: number } {
  const v = value as { t?: unknown; s?: unknown } | null;
  return typeof v === "object" && v !== null && typeof v.t === "number" && typeof v.s === "number";
}

/** Offset paging for small, stable lists (access check), with an opaque offset cursor. */
export function offsetPage<T>(all: readonly T[], query: Query, defaultSize: number) {
  const size = intParam(query, "size", defaultSize, 1, 100);
  const cursor = decodeCursor(query.cursor, (v): v is { o: number } => {
    const o = (v as { o?: unknown } | null)?.o;
    return typeof o === "number" && Number.isInteger(o) && o >= 0;
  });
  const from = cursor?.o ?? 0;
  const hasNext = from + size < all.length;
  const meta: PageMeta = {
    size,
    total: all.length,
    next_cursor: hasNext ? encodeCursor({ o: from + size }) : null,
    has_next: hasNext,
    has_prev: from > 0,
  };
  return { items: all.slice(from, from + size), meta };
}
