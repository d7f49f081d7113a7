/**
 * One search as one user, the same for `/v1/search` and `syncmirror search`. The user is matched
 * without regard to case (emails are case-insensitive; the mirror keeps each as the service spelled
 * it), through the mirror's pairs, so the access join below keeps using its index. A query the
 * index refuses is tried once more with its punctuated terms quoted (search-terms.ts).
 */
import { SearchQueryError } from "../errors.js";
import type { SearchHit, SearchQuery } from "../store/consumer-types.js";
import type { Store } from "../store/store.js";
import type { SearchParams } from "./params.js";
import { quotePunctuatedTerms } from "./search-terms.js";

export type SearchSource = Pick<Store, "search" | "pairs">;

export interface UserSearch {
  hits: SearchHit[];
  /** No pair of the searched mirrors has this user, in any case: most likely a wrong email. */
  unknownUser: boolean;
  /** Up to five users the searched mirrors know, for a hint. */
  knownUsers: string[];
}

/** `mirrors`: every mirror of the config; `params.mirror`, when set, narrows to one. */
export async function searchAsUser(
  source: SearchSource,
  params: SearchParams,
  mirrors: readonly string[],
): Promise<UserSearch> {
  const known = new Set<string>();
  for (const mirror of params.mirror === undefined ? mirrors : [params.mirror])
    for (const pair of await source.pairs.listForMirror(mirror)) known.add(pair.userEmail);
  const wanted = params.user.toLowerCase();
  const spellings = [...known].filter((email) => email.toLowerCase() === wanted);
  if (spellings.length === 0)
    return { hits: [], unknownUser: true, knownUsers: [...known].sort().slice(0, 5) };
  // One spelling in practice; should the service have spelled the user two ways, each one's best come in turn.
  const hits = new Map<string, SearchHit>();
  for (const userEmail of spellings) {
    const query = { userEmail, mirror: params.mirror, query: params.q, limit: params.limit };
    for (const hit of await queryAsWritten(source.search, query))
      if (hits.size < params.limit) hits.set(hit.key, hit);
  }
  return { hits: [...hits.values()], unknownUser: false, knownUsers: [] };
}

async function queryAsWritten(search: SearchSource["search"], q: SearchQuery): Promise<SearchHit[]> {
  try {
    return await search.query(q);
  } catch (error) {
    if (!(error instanceof SearchQueryError)) throw error;
    const requoted = quotePunctuatedTerms(q.query);
    if (!requoted.ok)
      throw new SearchQueryError(`the search query is not valid: ${requoted.problem}`, { cause: error });
    if (requoted.query === q.query) throw error;
    return search.query({ ...q, query: requoted.query });
  }
}
