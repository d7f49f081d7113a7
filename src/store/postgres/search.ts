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

const ADD_INDEX = [
  `ALTER TABLE resources ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
     setweight(to_tsvector('simple'::regconfig, ${folded("title")}), 'A') ||
     setweight(to_tsvector('simple'::regconfig, ${folded("content_text")}), 'B')) STORED`,
  "CREATE INDEX resources_search ON resources USING gin (search_vector) WHERE deleted_at IS NULL",
];
const DROP_INDEX = "ALTER TABLE resources DROP COLUMN IF EXISTS search_vector";

const PRESENT_SQL = `SELECT 1 FROM pg_attribute
  WHERE attrelid = 'resources'::regclass AND attname = 'search_vector' AND NOT attisdropped`;

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

export async function rebuildSearchIndex(pool: pg.Pool): Promise<{ indexed: number }> {
  return inLockedTransaction(pool, async (client) => {
    await client.query(DROP_INDEX);
    return { indexed: await build(client) };
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
  const { rows } = await client.query<{ n: string }>(
    "SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL",
  );
  return Number(rows[0]?.n ?? 0);
}

async function inLockedTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [SEARCH_LOCK]);
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
