/**
 * Where a dialect's drizzle-kit migrations ship: `migrations/<dialect>/` at the package root,
 * the same from `src/` (tests) and `dist/` (the built CLI), both two levels below it.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function migrationsDir(dialect: "sqlite" | "postgres"): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..", "..", "migrations", dialect);
}
