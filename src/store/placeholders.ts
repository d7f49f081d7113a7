/**
 * Named parameters of drizzle's prepared statements, the same for both dialects: a statement a
 * pass runs per page or per run is built once per connection, then only bound and executed.
 */
import { type Placeholder, type SQL, sql } from "drizzle-orm";

/** A prepared statement's named parameter. */
export const p = (name: string): Placeholder => sql.placeholder(name);

/** A named parameter as an update's or upsert's value: drizzle's `set` takes SQL, not placeholders. */
export const value = (name: string): SQL => sql`${sql.placeholder(name)}`;
