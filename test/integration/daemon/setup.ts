/**
 * Shared by the daemon suite: cron expressions, rewriting a harness config's schedules, and a
 * guard that `dist/` (what the child processes run) is built.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, beforeAll, expect } from "vitest";
import { parse, stringify } from "yaml";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import type { Harness } from "../../helpers/mirror-harness.js";

/** node-cron's 6-field form: every second. */
export const EVERY_SECOND = "*/1 * * * * *";
/** 03:00:00 on 1 January: never during a test run. */
export const NEVER = "0 0 3 1 1 *";

/**
 * Two whole seconds of one minute, `gapSeconds` apart, the first at least `leadMs` ahead, as a
 * 6-field cron. A second's lead is enough for times set while no process reads the config; a
 * daemon started afterwards that must see them falling needs its start-up time as lead too.
 */
export function twoTimesSoon(leadMs = 1000, gapSeconds = 1): { cron: string; first: Date; last: Date } {
  let first = new Date(Math.ceil((Date.now() + leadMs) / 1000) * 1000);
  if (first.getUTCSeconds() > 59 - gapSeconds)
    first = new Date(Math.ceil(first.getTime() / 60_000) * 60_000 + 1000);
  const last = new Date(first.getTime() + gapSeconds * 1000);
  const cron = `${first.getUTCSeconds()},${last.getUTCSeconds()} ${first.getUTCMinutes()} ${first.getUTCHours()} * * *`;
  return { cron, first, last };
}

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

/**
 * Registers the suite's hooks: `dist/` checked once, and after each test every daemon started
 * through `daemon()` killed and the current harness closed.
 */
export function daemonSuite(): {
  /** Remembers the harness to close after the test. */
  use(h: Harness): Harness;
  /** A started daemon, by default once /readyz answers 200 (the database exists and is migrated). */
  daemon(h: Harness, options?: { ready?: boolean; env?: Record<string, string> }): Promise<DaemonProcess>;
} {
  const daemons: DaemonProcess[] = [];
  let current: Harness | undefined;
  beforeAll(buildOnce);
  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop("SIGKILL");
    await current?.close();
    current = undefined;
  });
  return {
    use(h) {
      current = h;
      return h;
    },
    async daemon(h, options = {}) {
      const d = await startDaemon(h, options.env);
      daemons.push(d);
      if (options.ready ?? true)
        await until(async () => (await d.get("/readyz")).status === 200, "/readyz 200");
      return d;
    },
  };
}

/**
 * PostgreSQL only: a daemon whose `main` is paused and ticks every second, started while another
 * session holds the mirror's schedule row locked, once it waits for that row. Its drain waits too
 * (without blocking the process) until `release()` or the drain's own time limit.
 */
export async function daemonWaitingOnScheduleRow(
  suite: ReturnType<typeof daemonSuite>,
  h: Harness,
): Promise<{ d: DaemonProcess; release(): Promise<void> }> {
  expect((await h.cli(["pause", "--mirror", "main"])).code, "the mirror's schedule row exists").toBe(0);
  setCrons(h, { incremental_cron: EVERY_SECOND, full_cron: NEVER });
  const locker = new pg.Client({ connectionString: h.databaseUrl });
  locker.on("error", () => {});
  await locker.connect();
  const release = async () => {
    await locker.query("ROLLBACK");
    await locker.end();
  };
  try {
    await locker.query("BEGIN");
    await locker.query("SELECT * FROM schedules WHERE mirror = 'main' FOR UPDATE");
    const d = await suite.daemon(h, { ready: false });
    await until(
      () =>
        h.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        ).length,
      "the daemon recording a tick, waiting for the locked row",
    );
    return { d, release };
  } catch (error) {
    await release();
    throw error;
  }
}
