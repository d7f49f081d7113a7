/**
 * better-sqlite3 is synchronous: each SQLite repository is written as plain functions, which the
 * store runtime turns into the async interface the sync code sees.
 */
import { type SQL, sql } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";

/** The synchronous twin of an async repository interface. */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never;
};

/** `column + :name`, for counters a prepared update adds to. */
export const plus = (column: AnySQLiteColumn, name: string): SQL => sql`${column} + ${sql.placeholder(name)}`;
