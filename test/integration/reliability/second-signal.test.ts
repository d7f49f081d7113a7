/**
 * A second SIGINT while `syncmirror run` drains (docs/operations.md#restarts): Ctrl-C on
 * `npm exec syncmirror run` arrives twice, from the terminal and forwarded by npm. The drain is
 * held open by a row another PostgreSQL session keeps locked (the client waits without blocking
 * the process, unlike SQLite's busy wait), so the second signal surely meets it running; the
 * handling is the same on both stores.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { spawnCli, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { daemonSuite, daemonWaitingOnScheduleRow, NEVER } from "../daemon/setup.js";

const suite = daemonSuite();

describe.runIf(onPostgres)("a second SIGINT while the daemon drains", () => {
  it("does not kill it: the drain goes on and it exits 0", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const { d, release } = await daemonWaitingOnScheduleRow(suite, h);
    try {
      d.child.kill("SIGINT");
      await until(() => d.logs().some((l) => String(l.msg).startsWith("stopping")), "the drain to start");
      d.child.kill("SIGINT");
      expect(await d.exited, d.stderr()).toEqual({ code: 0, signal: null });
    } finally {
      await release();
    }
  });
});

describe.runIf(onPostgres)("a stop that a locked row holds up", () => {
  it("ends a one-shot sync anyway, with exit 1 and a log line saying so", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"])).code, "a first pass leaves the mirror's lease row").toBe(0);
    const locker = new pg.Client({ connectionString: h.databaseUrl });
    locker.on("error", () => {});
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("SELECT * FROM leases WHERE mirror = 'main' FOR UPDATE");
      const sync = spawnCli(["sync", "--config", h.configPath], h.env);
      await until(
        () =>
          h.query(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          ).length,
        "the sync waiting for the locked lease row",
      );
      sync.child.kill("SIGINT");
      expect(await sync.exited, sync.stderr()).toEqual({ code: 1, signal: null });
      expect(sync.stderr()).toContain("still stopping 9 s after SIGINT: exiting now");
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
  });
});
