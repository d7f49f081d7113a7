/**
 * Where a dialect's drizzle-kit migrations ship: `migrations/<dialect>/` at the package root. The
 * code asking may sit in `src/store/` (tests), in a bundled chunk of `dist/` (the built CLI) or in
 * `dist-bench/src/store/` (the bench), so the nearest folder up that holds them is the one.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function migrationsDir(dialect: "sqlite" | "postgres"): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "migrations", dialect);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) {
      throw new Error(
        `no migrations/${dialect} folder above ${fileURLToPath(import.meta.url)}: reinstall syncmirror (the package ships it beside dist/)`,
      );
    }
  }
}
