/**
 * A second SIGINT while `syncmirror run` drains (docs/operations.md#restarts): Ctrl-C on
 * `npm exec syncmirror run` arrives twice, from the terminal and forwarded by npm. The drain is
 * held open by a row another PostgreSQL session keeps locked (the client waits without blocking
 * the process, unlike SQLite's busy wait), so the second signal surely meets it running; the
 * handling is the same on both stores.
 */
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
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
