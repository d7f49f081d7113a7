/** Cursor paging of the service's lists (`meta.next_cursor`, `meta.has_next`). */

import type { z } from "zod";
import { BadResponseError } from "../errors.js";
import type { Route } from "./routes.js";
import type { PageMeta } from "./schemas.js";

/**
 * The cursor of the next page, or undefined at the end. A page that claims more but gives no new
 * cursor is refused, as is one without `meta` (the schemas require it) or whose `meta` has neither
 * `has_next` nor `next_cursor`: a silently short list (e.g. of project users) would revoke access wrongly.
 */
function nextCursor(meta: z.infer<typeof PageMeta>, seen: Set<string>, route: Route): string | undefined {
  if (meta.has_next === false) return undefined;
  if (meta.has_next === undefined && meta.next_cursor === undefined) {
    throw new BadResponseError(
      `GET ${route}: the page's meta has neither has_next nor next_cursor, so whether more pages follow is unknown: report it; the list was not used`,
      { method: "GET", route, detail: { meta } },
    );
  }
  const next = meta.next_cursor ?? undefined;
  if (!next && !meta.has_next) return undefined;
  if (!next || seen.has(next)) {
    throw new BadResponseError(
      `GET ${route}: the service said there are more pages but gave ${next ? "a cursor it gave before" : "no cursor"}: report it; the list was not used`,
      { method: "GET", route, detail: { meta } },
    );
  }
  seen.add(next);
  return next;
}

/** Every item of a cursor-paged list, page after page; stop iterating to stop fetching. */
export async function* paged<T>(
  route: Route,
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; meta: z.infer<typeof PageMeta> }>,
): AsyncGenerator<T> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.items;
    cursor = nextCursor(page.meta, seen, route);
  } while (cursor);
}
