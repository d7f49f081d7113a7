/**
 * What a repository runs its statements on: the pool outside a transaction, the transaction's
 * own client inside one. Hot-path statements go to `client` as named prepared statements; the
 * rest through drizzle over the same client.
 */
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import type pg from "pg";
import type * as schema from "./schema.js";

export type Db = NodePgDatabase<typeof schema>;

export interface Conn {
  db: Db;
  client: pg.Pool | pg.PoolClient;
}

/** The one row a statement returns, or undefined. */
export async function queryOne<R extends pg.QueryResultRow>(
  client: Conn["client"],
  query: pg.QueryConfig,
): Promise<R | undefined> {
  const result = await client.query<R>(query);
  return result.rows[0];
}

/**
 * A drizzle prepared statement built on its first call and reused by every later one on this
 * connection: a statement each run or page sends is not rebuilt by drizzle each time.
 */
export function onFirstUse<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => {
    built ??= build();
    return built;
  };
}
