/**
 * What the consumers (the change feed and search) read from either store: the same shapes on
 * SQLite and PostgreSQL, so `/v1/changes`, `/v1/search` and the commands never know the dialect.
 */
import type { ChangeOp, ResourceInput } from "./types.js";

/** The current row, the same fields the ingest writes (JSON columns parsed). */
/** A key's current row: live, or its tombstone (`deletedAt` set, content cleared). */
export type FeedResource = ResourceInput & { deletedAt: string | null };

export interface FeedAccess {
  mirror: string;
  userEmail: string;
  source: string;
}

export interface FeedChange {
  seq: number;
  key: string;
  op: ChangeOp;
  at: string;
  resource: FeedResource | null;
  access: FeedAccess[];
}

export interface FeedPage {
  changes: FeedChange[];
  /** The `after` to send next: the last seq returned, or the newest seq when caught up. */
  nextAfter: number;
  hasMore: boolean;
}

export interface FeedQuery {
  after: number;
  limit: number;
  /** Only changes to keys this mirror recorded or can see, with its access rows only. */
  mirror?: string | undefined;
}

export interface SearchHit {
  key: string;
  title: string | null;
  url: string | null;
  sourceType: string;
  /** Best-matching fragment; matched terms between HIGHLIGHT.open and HIGHLIGHT.close. */
  snippet: string;
}

export interface SearchQuery {
  userEmail: string;
  mirror?: string | undefined;
  /** Words (AND), "phrases", prefix*, OR, NOT and parentheses, on both dialects. */
  query: string;
  limit: number;
}

export const HIGHLIGHT = { open: "«", close: "»" } as const;

/** What applying `search.enabled` did: built the index, dropped it, or nothing (null). */
export type SearchSettingApplied = { action: "built"; indexed: number } | { action: "dropped" } | null;

/** The same advice on both dialects when a query does not parse. */
export const SEARCH_QUERY_ADVICE =
  'the search query is not valid: use words, "quoted phrases", prefix* and AND / OR / NOT; put words with punctuation in double quotes';

/** Reached only with search.enabled: true (the commands and /v1/search check it first): the index is not built yet. */
export const SEARCH_UNAVAILABLE_ADVICE =
  "the search index does not exist yet: run syncmirror reindex (syncmirror run and sync also build it at start)";
