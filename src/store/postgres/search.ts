/**
 * ACL-aware full-text search on PostgreSQL, with its own text search: a stored generated
 * `tsvector` column `resources.search_vector` (title weighted above the text, accents removed, the
 * 'simple' configuration: no stemming, no stop words, no extension needed) and a partial GIN index
 * `resources_search` over live rows.
 *
 * The column exists only while `search.enabled` is true: `apply(false)` drops it, so ingest pays
 * nothing for search that is off (an expression index would cost the same when on, but ranking
 * would recompute every match's vector). Postgres computes the column in the statement that
 * writes the row, so the index follows each page transaction as SQLite's triggers do. Access is
 * joined at query time, never copied into the index.
 */
import type pg from "pg";
import { SearchQueryError, SearchUnavailableError } from "../../errors.js";
import {
  HIGHLIGHT,
  SEARCH_QUERY_ADVICE,
  SEARCH_UNAVAILABLE_ADVICE,
  type SearchHit,
  type SearchQuery,
  type SearchSettingApplied,
} from "../consumer-types.js";
import { DIACRITICS, toTsquery } from "./search-query.js";

/**
 * A tsvector refuses more than 1 MB of lexemes: 250,000 characters are at most 1 MB of UTF-8, so no
 * long document can fail its page; text past them is not indexed.
 */
const INDEXED_CHARS = 250_000;
/** Any fixed number, the same in every syncmirror: replicas building or dropping the index take turns. */
const SEARCH_LOCK = 0x5_9c_4d_13;

// Decomposed, stripped of combining accents, recomposed (translate() over a list of accented
// letters cost ten times the tokenizing), needing a UTF8 database, PostgreSQL's default. Text that
// is all ASCII (as many bytes as characters) has no accent to strip and is its own NFD and NFC, so
// it skips the folding, which cost as much as the tokenizing (bench/pg-search.ts): same vector.
const folded = (column: string) => {
  const text = `left(coalesce(${column}, ''), ${INDEXED_CHARS})`;
  return `CASE WHEN octet_length(${text}) = char_length(${text}) THEN ${text}
    ELSE normalize(regexp_replace(normalize(${text}, NFD), '${DIACRITICS}', '', 'g'), NFC) END`;
};

const INDEX_DEFINITION = "resources_search ON resources USING gin (search_vector) WHERE deleted_at IS NULL";
const CREATE_INDEX = `CREATE INDEX ${INDEX_DEFINITION}`;
const CREATE_INDEX_CONCURRENTLY = `CREATE INDEX CONCURRENTLY ${INDEX_DEFINITION}`;
const ADD_INDEX = [
  `ALTER TABLE resources ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
     setweight(to_tsvector('simple'::regconfig, ${folded("title")}), 'A') ||
     setweight(to_tsvector('simple'::regconfig, ${folded("content_text")}), 'B')) STORED`,
  CREATE_INDEX,
];
const DROP_INDEX = "ALTER TABLE resources DROP COLUMN IF EXISTS search_vector";

const PRESENT_SQL = `SELECT 1 FROM pg_attribute
  WHERE attrelid = 'resources'::regclass AND attname = 'search_vector' AND NOT attisdropped`;

/** The column without its index (dropped by hand): reindex creates it again. */
const INDEX_PRESENT_SQL = "SELECT 1 FROM pg_class WHERE oid = to_regclass('resources_search')";

/** What a REINDEX CONCURRENTLY of `resources_search` cut short leaves: names PostgreSQL chose, safe to quote as they are. */
const LEFTOVERS_SQL = `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  WHERE i.indrelid = 'resources'::regclass AND NOT i.indisvalid
    AND c.relname ~ '^resources_search_cc(new|old)[0-9]*$'`;

const HEADLINE_OPTIONS = `StartSel="${HIGHLIGHT.open}", StopSel="${HIGHLIGHT.close}", MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=" … "`;

// Ranked and cut first, so the headline (which re-parses the text) runs for the returned rows only.
const SEARCH_SQL = `WITH q AS (SELECT to_tsquery('simple', $1) AS query),
  best AS (
    SELECT r.key, ts_rank(r.search_vector, q.query) AS rank
    FROM resources r, q
    WHERE r.search_vector @@ q.query AND r.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM resource_access a WHERE a.key = r.key AND a.user_email = $2
                  AND ($3::text IS NULL OR a.mirror = $3))
    ORDER BY rank DESC, r.key LIMIT $4)
  SELECT r.key, r.title, r.url, r.source_type,
         ts_headline('simple', concat_ws(' ', r.title, left(r.content_text, ${INDEXED_CHARS})), q.query,
                     '${HEADLINE_OPTIONS}') AS snippet
  FROM best JOIN resources r ON r.key = best.key, q
  ORDER BY best.rank DESC, best.key`;

/** syntax_error, and to_tsquery's complaints about its input. */
const QUERY_ERROR_CODES = new Set(["42601", "22023", "54000"]);

async function isSearchIndexPresent(client: pg.Pool | pg.PoolClient): Promise<boolean> {
  return (await client.query(PRESENT_SQL)).rowCount === 1;
}

export async function applySearchSetting(pool: pg.Pool, enabled: boolean): Promise<SearchSettingApplied> {
  // Nearly every start finds the index as the setting wants it: one read, without the lock and
  // its transaction (three round trips more); a change is decided again under the lock.
  if ((await isSearchIndexPresent(pool)) === enabled) return null;
  return inLockedTransaction(pool, async (client) => {
    const present = await isSearchIndexPresent(client);
    if (enabled && !present) return { action: "built", indexed: await build(client) };
    if (!enabled && present) {
      await client.query(DROP_INDEX);
      return { action: "dropped" };
    }
    return null;
  });
}

/**
 * Rebuilds the index without blocking anyone: REINDEX CONCURRENTLY builds a new copy beside the
 * old one, which serves readers (and takes writers' rows) until the swap. Dropping and adding the
 * column instead held the table's exclusive lock for the whole rebuild (30,000 documents: 10 to
 * 22 s of blocked reads, against 0.8 to 2.1 s of REINDEX with reads answering; docs/consumers.md)
 * and left a dropped-column slot behind each time. A REINDEX CONCURRENTLY cut short (a lost
 * connection, a kill) leaves its unfinished copy behind as an invalid `_ccnew` (or `_ccold`)
 * index, which writes may still maintain: those are dropped first. Only a mirror without the
 * column yet builds it, as `apply` does.
 */
export async function rebuildSearchIndex(pool: pg.Pool): Promise<{ indexed: number }> {
  return withSearchLock(pool, async (client) => {
    if (!(await isSearchIndexPresent(client))) return { indexed: await inTransaction(client, build) };
    const leftovers = await client.query<{ name: string }>(LEFTOVERS_SQL);
    // CONCURRENTLY cannot run inside a transaction block: each statement here is its own.
    for (const { name } of leftovers.rows) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    const indexed = (await client.query(INDEX_PRESENT_SQL)).rowCount === 1;
    await client.query(indexed ? "REINDEX INDEX CONCURRENTLY resources_search" : CREATE_INDEX_CONCURRENTLY);
    return { indexed: await countLive(client) };
  });
}

export async function searchResources(pool: pg.Pool, q: SearchQuery): Promise<SearchHit[]> {
  const tsquery = toTsquery(q.query);
  if (!(await isSearchIndexPresent(pool))) throw new SearchUnavailableError(SEARCH_UNAVAILABLE_ADVICE);
  try {
    const { rows } = await pool.query<Record<string, string | null>>(SEARCH_SQL, [
      tsquery,
      q.userEmail,
      q.mirror ?? null,
      q.limit,
    ]);
    return rows.map((r) => ({
      key: r.key as string,
      title: r.title ?? null,
      url: r.url ?? null,
      sourceType: r.source_type as string,
      snippet: r.snippet ?? "",
    }));
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && QUERY_ERROR_CODES.has(code))
      throw new SearchQueryError(SEARCH_QUERY_ADVICE, { cause });
    throw cause;
  }
}

async function build(client: pg.PoolClient): Promise<number> {
  for (const statement of ADD_INDEX) await client.query(statement);
  return countLive(client);
}

async function countLive(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    "SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL",
  );
  return Number(rows[0]?.n ?? 0);
}

/** `fn` in a transaction holding the search lock until it ends. */
async function inLockedTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, (client) =>
    inTransaction(client, async () => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [SEARCH_LOCK]);
      return fn(client);
    }),
  );
}

/**
 * `fn` on a client holding the search lock for the session, outside any transaction (what
 * CONCURRENTLY needs). When `fn` fails the client is destroyed, which releases the lock.
 */
async function withSearchLock<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query("SELECT pg_advisory_lock($1)", [SEARCH_LOCK]);
    const result = await fn(client);
    await client.query("SELECT pg_advisory_unlock($1)", [SEARCH_LOCK]);
    return result;
  });
}

async function inTransaction<T>(
  client: pg.PoolClient,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

/**
 * A pool client of its own for `fn`, given back after it, or destroyed when `fn` failed (what it
 * held dies with the session). A connection lost between statements is reported by the next
 * one: the client's own error event must not take the process down meanwhile.
 */
async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onLost = (error: Error) => {
    broken = error;
  };
  client.on("error", onLost);
  try {
    return await fn(client);
  } catch (error) {
    broken ??= error as Error;
    throw error;
  } finally {
    client.off("error", onLost);
    client.release(broken);
  }
}
