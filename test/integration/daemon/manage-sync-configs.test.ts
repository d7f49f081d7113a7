/**
 * `manage_sync_configs: true`: the daemon applies declared sync configs at start-up and before a
 * pass whose declaration is not applied; what it cannot apply is logged, counted, recorded and
 * shown as drift, and never stops another mirror. A change, a rename too, waits for the pass left in
 * flight, and the pass after it is full.
 */
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
import { DECLARED_SIM, managedRow, remoteNamed, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { daemonSuite, EVERY_SECOND, NEVER } from "./setup.js";

const suite = daemonSuite();

describe("syncmirror run with manage_sync_configs: true", () => {
  it("applies at start-up; a config it cannot apply is drift (logged, counted, recorded), the other mirror syncs", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
      }),
    );
    h.sim.people.leaveProject("user3@example.com");
    writeMirrors(
      h,
      {
        good: wiki({ name: "Good" }),
        bad: wiki({ name: "Bad", users: ["user1@example.com", "user3@example.com"] }),
      },
      { manage_sync_configs: true },
    );
    const d = await suite.daemon(h);
    const succeeded = (mirror: string) =>
      d.metric("syncmirror_triggers_total", { mirror, outcome: "succeeded" });
    await until(async () => (await succeeded("good")) >= 1, "a succeeded pass of the good mirror");
    expect(remoteNamed(h.sim, "Good").user_emails).toEqual(["user1@example.com", "user2@example.com"]);
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Bad");
    const messages = d.logs().map((l) => String(l.msg));
    const created = messages.findIndex((m) => m.startsWith('created sync config "Good"'));
    expect(created).toBeGreaterThanOrEqual(0);
    expect(created).toBeLessThan(messages.indexOf("daemon started"));
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "good" })).toBe(0);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(1);
    expect(managedRow(h, "good")).toMatchObject({ origin: "created", last_error: null });
    expect(managedRow(h, "bad")?.last_error).toContain("mirrors[1].sync_config.users[1] (user3@example.com)");
    const drift = d
      .logs()
      .find((l) => l.mirror === "bad" && l.msg === "the declared sync config could not be applied");
    expect(String(drift?.err)).toContain("not users of this project: user3@example.com");

    // Each later pass of the bad mirror tries again, and is skipped while nothing is applied.
    await until(
      async () => (await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "bad" })) >= 2,
      "another attempt before a later pass",
    );
    expect(await succeeded("bad")).toBe(0);
    expect(
      d.logs().some((l) => l.mirror === "bad" && l.msg === "pass skipped: no sync config to trigger"),
    ).toBe(true);

    h.sim.people.joinProject("user3@example.com");
    await until(async () => (await succeeded("bad")) >= 1, "the bad mirror's pass once the user is back");
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(0);
    expect(managedRow(h, "bad")).toMatchObject({ origin: "created", last_error: null });
    expect((await d.stop()).code).toBe(0);
  });

  it("applies a rename only once the pass left in flight ends, and makes the next pass a full one", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
      }),
    );
    writeMirrors(h, { main: wiki() });
    expect((await h.cli(["apply"])).code).toBe(0);
    const { id } = remoteNamed(h.sim, "Wiki");
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" })).code).toBeNull();
    writeMirrors(h, { main: wiki({ name: "Wiki renamed" }) }, { manage_sync_configs: true });

    const d = await suite.daemon(h);
    const passes = (mode: string) =>
      d.metric("syncmirror_triggers_total", { mirror: "main", mode, outcome: "succeeded" });
    await until(async () => (await passes("full")) >= 1, "a full pass after the rename");
    const messages = d.logs().map((l) => String(l.msg));
    const deferred = messages.indexOf("the declared sync config is applied once the pass in flight ends");
    const renamed = messages.findIndex((m) => m.startsWith('replaced name of sync config "Wiki renamed"'));
    expect(deferred).toBeGreaterThanOrEqual(0);
    expect(renamed).toBeGreaterThan(deferred);
    expect(messages[renamed]).toContain("the next pass is a full snapshot");
    expect(await passes("incremental")).toBeGreaterThanOrEqual(1);
    expect(h.sim.configs.list().find((c) => c.id === id)?.name).toBe("Wiki renamed");
    expect((await d.stop()).code).toBe(0);
  });
});
