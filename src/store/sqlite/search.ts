/**
 * ACL-aware full-text search over `resources` (SQLite FTS5). The index is kept by triggers on
 * `resources`, so every page transaction that writes, edits or tombstones a resource updates it
 * in the same commit: a kill -9 leaves both consistent, and no code in sync/ knows about search.
 * Access is enforced when querying (a join on `resource_access` and `deleted_at IS NULL`), never
 * copied into the index, so a revoked or deleted key cannot be returned even for an instant.
 *
 * `resources` has a text primary key, so its rowid may change on VACUUM: the FTS rowid comes from
 * `resources_fts_keys`, whose INTEGER PRIMARY KEY is stable. Objects: the FTS5 table
 * `resources_fts` (and its shadow tables), `resources_fts_keys`, the view `resources_fts_content`
 * and the triggers `resources_fts_insert` / `_update` / `_delete`.
 */
import type Database from "better-sqlite3";
import { SearchQueryError, SearchUnavailableError } from "../../errors.js";
import {
  HIGHLIGHT,
  SEARCH_QUERY_ADVICE,
  SEARCH_UNAVAILABLE_ADVICE,
  type SearchHit,
  type SearchQuery,
  type SearchSettingApplied,
} from "../consumer-types.js";

// External content: the index reads title and text back from `resources` through a view, so the
// text is stored once. FTS5 must then be told the exact old values to remove, which the triggers
// have; a row is indexed exactly while it is live (the whole index is built in the transaction
// that creates the triggers).
const INDEX_OBJECTS = `
CREATE TABLE resources_fts_keys (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE VIEW resources_fts_content AS
  SELECT k.id AS id, r.title AS title, r.content_text AS content_text
  FROM resources_fts_keys k JOIN resources r ON r.key = k.key;
CREATE VIRTUAL TABLE resources_fts USING fts5(
  title, content_text, content = 'resources_fts_content', content_rowid = 'id',
  tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
INSERT INTO resources_fts (resources_fts, rank) VALUES ('rank', 'bm25(4.0, 1.0)');
CREATE TRIGGER resources_fts_insert AFTER INSERT ON resources WHEN new.deleted_at IS NULL BEGIN
  INSERT INTO resources_fts_keys (key) VALUES (new.key);
  INSERT INTO resources_fts (rowid, title, content_text)
    SELECT id, new.title, new.content_text FROM resources_fts_keys WHERE key = new.key;
END;
CREATE TRIGGER resources_fts_update AFTER UPDATE OF title, content_text, deleted_at ON resources
WHEN old.title IS NOT new.title OR old.content_text IS NOT new.content_text
  OR old.deleted_at IS NOT new.deleted_at BEGIN
  INSERT INTO resources_fts (resources_fts, rowid, title, content_text)
    SELECT 'delete', id, old.title, old.content_text FROM resources_fts_keys
    WHERE key = old.key AND old.deleted_at IS NULL;
  DELETE FROM resources_fts_keys WHERE key = old.key AND new.deleted_at IS NOT NULL;
  INSERT INTO resources_fts_keys (key) SELECT new.key WHERE new.deleted_at IS NULL ON CONFLICT DO NOTHING;
  INSERT INTO resources_fts (rowid, title, content_text)
    SELECT id, new.title, new.content_text FROM resources_fts_keys
    WHERE key = new.key AND new.deleted_at IS NULL;
END;
CREATE TRIGGER resources_fts_delete AFTER DELETE ON resources WHEN old.deleted_at IS NULL BEGIN
  INSERT INTO resources_fts (resources_fts, rowid, title, content_text)
    SELECT 'delete', id, old.title, old.content_text FROM resources_fts_keys WHERE key = old.key;
  DELETE FROM resources_fts_keys WHERE key = old.key;
END;
`;

const DROP_INDEX_OBJECTS = `
DROP TRIGGER IF EXISTS resources_fts_insert;
DROP TRIGGER IF EXISTS resources_fts_update;
DROP TRIGGER IF EXISTS resources_fts_delete;
DROP TABLE IF EXISTS resources_fts;
DROP VIEW IF EXISTS resources_fts_content;
DROP TABLE IF EXISTS resources_fts_keys;
`;

const POPULATE = `
INSERT INTO resources_fts_keys (key) SELECT key FROM resources WHERE deleted_at IS NULL;
INSERT INTO resources_fts (resources_fts) VALUES ('rebuild');
`;

/** Whether the index and its triggers exist in this database. */
export async function isSearchIndexPresent(sqlite: Database.Database): Promise<boolean> {
  return isPresent(sqlite);
}

/**
 * Drops and rebuilds the index from the live resources in one transaction (a writer waits, a
 * reader sees the old index until the commit). Returns how many resources were indexed.
 */
export async function rebuildSearchIndex(sqlite: Database.Database): Promise<{ indexed: number }> {
  return sqlite.transaction(() => {
    sqlite.exec(DROP_INDEX_OBJECTS);
    sqlite.exec(INDEX_OBJECTS);
    sqlite.exec(POPULATE);
    return { indexed: countIndexed(sqlite) };
  })();
}

/**
 * Applies `search.enabled`: enabled and absent builds the index (returns its size); disabled and
 * present drops it with its triggers, so ingest stops paying for it and a later re-enable starts
 * from the current rows instead of a stale index. Otherwise nothing happens (null).
 */
export async function applySearchSetting(
  sqlite: Database.Database,
  enabled: boolean,
): Promise<SearchSettingApplied> {
  const present = isPresent(sqlite);
  if (enabled && !present) return { action: "built", ...(await rebuildSearchIndex(sqlite)) };
  if (!enabled && present) {
    sqlite.transaction(() => sqlite.exec(DROP_INDEX_OBJECTS))();
    return { action: "dropped" };
  }
  return null;
}

/** The user's live matching resources, best first. Throws SearchQueryError for bad syntax. */
export async function searchResources(sqlite: Database.Database, q: SearchQuery): Promise<SearchHit[]> {
  if (!isPresent(sqlite)) {
    throw new SearchUnavailableError(SEARCH_UNAVAILABLE_ADVICE);
  }
  try {
    return sqlite
      .prepare<[Record<string, string | number | null>], SearchHit>(
        `SELECT r.key AS key, r.title AS title, r.url AS url, r.source_type AS sourceType,
                snippet(resources_fts, -1, @open, @close, '…', 16) AS snippet
         FROM resources_fts f
         JOIN resources_fts_keys k ON k.id = f.rowid
         JOIN resources r ON r.key = k.key
         WHERE resources_fts MATCH @query AND r.deleted_at IS NULL
           AND EXISTS (SELECT 1 FROM resource_access a WHERE a.key = r.key AND a.user_email = @user
                       AND (@mirror IS NULL OR a.mirror = @mirror))
         ORDER BY f.rank LIMIT @limit`,
      )
      .all({ ...HIGHLIGHT, query: q.query, user: q.userEmail, mirror: q.mirror ?? null, limit: q.limit });
  } catch (cause) {
    if ((cause as { code?: unknown }).code === "SQLITE_ERROR") {
      throw new SearchQueryError(SEARCH_QUERY_ADVICE, { cause });
    }
    throw cause;
  }
}

function isPresent(sqlite: Database.Database): boolean {
  return (
    (
      sqlite
        .prepare(
          "SELECT count(*) AS n FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'resources_fts_%'",
        )
        .get() as { n: number }
    ).n === 3
  );
}

function countIndexed(sqlite: Database.Database): number {
  return (sqlite.prepare("SELECT count(*) AS n FROM resources_fts_keys").get() as { n: number }).n;
}
