-- Every pass rewrites last_seen_at on each access row it sees: with a fifth of each page left free,
-- that update fits beside the old row and needs no index entries (a HOT update). Pages written
-- before this keep their fill until they are rewritten.
ALTER TABLE "resource_access" SET (fillfactor = 80);
