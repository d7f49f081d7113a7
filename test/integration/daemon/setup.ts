/**
 * Shared by the daemon suite: cron expressions, rewriting a harness config's schedules, and a
 * guard that `dist/` (what the child processes run) is built.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import type { Harness } from "../../helpers/mirror-harness.js";

/** node-cron's 6-field form: every second. */
export const EVERY_SECOND = "*/1 * * * * *";
/** 03:00:00 on 1 January: never during a test run. */
export const NEVER = "0 0 3 1 1 *";

const ROOT = join(import.meta.dirname, "..", "..", "..");

/** Rewrites the harness's config file through `edit` (the parsed YAML document). */
export function editConfig(h: Harness, edit: (config: Record<string, unknown>) => void): void {
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, unknown>;
  edit(config);
  writeFileSync(h.configPath, stringify(config));
}

/** Sets `defaults.incremental_cron` / `full_cron` in the harness's config file. */
export function setCrons(h: Harness, crons: { incremental_cron: string; full_cron: string }): void {
  editConfig(h, (config) => {
    config.defaults = { ...(config.defaults as object), ...crons };
  });
}

/**
 * Fails fast, naming the fix, when `dist/cli.js` (what the child processes run) is missing.
 * `npm test` builds first (`pretest`); a direct `vitest run` needs `npm run build` before it.
 */
export function buildOnce(): void {
  if (!existsSync(join(ROOT, "dist", "cli.js")))
    throw new Error("dist/cli.js is missing: run `npm run build` (npm test does it) before this suite");
}
