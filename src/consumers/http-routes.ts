/**
 * `/v1/changes` and `/v1/search` (docs/reference/http.md): bearer token always, even on loopback, since they
 * serve content. Without the right token the answer is a bare 401, whatever the path or input.
 */
import type { IncomingMessage } from "node:http";
import { SearchQueryError, SearchUnavailableError, UsageError } from "../errors.js";
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
import type { Store } from "../store/store.js";
import { readChangesWaiting } from "./change-waiter.js";
import { feedPageJson, searchJson } from "./feed-json.js";
import { parseFeedParams, parseSearchParams, queryParams } from "./params.js";
import { searchAsUser } from "./search-as-user.js";

export type ConsumerSource = Pick<Store, "feed" | "search" | "pairs" | "mirrors">;

export interface ConsumerRoutesDeps {
  /** The open store (either dialect); undefined until the daemon has opened it. */
  source: () => ConsumerSource | undefined;
  /** From the environment variable named by `http.token_env`. */
  token: string | undefined;
  mirrors: readonly string[];
  searchEnabled: boolean;
  /** Aborted when the daemon stops: long polls answer at once with what there is. */
  signal: AbortSignal;
}

/** The consumer endpoints (bearer token always). */
export const CONSUMER_PATHS = Object.freeze({ changes: "/v1/changes", search: "/v1/search" });
const PATHS = new Set<string>(Object.values(CONSUMER_PATHS));

/** Answers `/v1/changes` and `/v1/search`; undefined for any other path (another route's). */
export function createConsumerRoutes(deps: ConsumerRoutesDeps): Route {
  return async (req: IncomingMessage): Promise<Reply | undefined> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (!PATHS.has(url.pathname)) return undefined;
    if (!isBearerAuthorized(req.headers.authorization, deps.token)) return unauthorizedReply();
    if (req.method !== "GET" && req.method !== "HEAD") return methodNotAllowedReply("GET, HEAD");
    const source = deps.source();
    if (source === undefined) return notReadyReply();
    try {
      const body =
        url.pathname === CONSUMER_PATHS.changes
          ? await changes(deps, source, url, req)
          : await search(deps, source, url);
      return json(200, body);
    } catch (error) {
      if (error instanceof UsageError) return errorReply(400, error.code, error.message);
      // `<parameter>: <what is wrong>`, as every other 400 says it.
      if (error instanceof SearchQueryError) return errorReply(400, error.code, `q: ${error.message}`);
      if (error instanceof SearchUnavailableError) return errorReply(404, error.code, error.message);
      throw error;
    }
  };
}

async function changes(deps: ConsumerRoutesDeps, source: ConsumerSource, url: URL, req: IncomingMessage) {
  const params = await parseFeedParams(queryParams(url.searchParams), deps.mirrors, (mirror) =>
    source.mirrors.known(mirror),
  );
  const read = () => source.feed.readChanges(params);
  if (params.wait === 0) return feedPageJson(await read());
  const gone = new AbortController();
  const onClose = () => gone.abort();
  req.socket.once("close", onClose);
  try {
    const signal = AbortSignal.any([gone.signal, deps.signal]);
    return feedPageJson(
      await readChangesWaiting(read, {
        nextChange: source.feed.waitForChange,
        waitMs: params.wait * 1000,
        signal,
      }),
    );
  } finally {
    req.socket.off("close", onClose);
  }
}

async function search(deps: ConsumerRoutesDeps, source: ConsumerSource, url: URL) {
  // Whatever the query, a mirror without an index has no search to answer it.
  if (!deps.searchEnabled)
    throw new SearchUnavailableError("search is not enabled: set search.enabled: true");
  const params = parseSearchParams(queryParams(url.searchParams), deps.mirrors);
  const { hits } = await searchAsUser(source, params, deps.mirrors);
  return searchJson(hits);
}
