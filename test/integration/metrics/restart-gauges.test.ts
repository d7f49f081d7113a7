/**
 * A daemon started on a mirror left with a held sweep, a pair awaiting its baseline and a skipped
 * pair serves those gauges, as `status --json` says them, from its first scrape: restored from the
 * database, not reset to 0 until its own first pass. SQLite only: the gauges are read the same way
 * on both stores (the daemon suite's restart test runs on both).
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MirrorStatus } from "../../../src/sync/status-report.js";
import { type DaemonProcess, parseMetrics, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const MAIN = { mirror: "main" };
let h: Harness | undefined;
let d: DaemonProcess | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await d?.stop("SIGKILL");
  await h?.close();
  d = undefined;
  h = undefined;
});

describe("gauges after a restart", () => {
  it("serves held revocations, pairs awaiting a baseline and skipped pairs from the first scrape", async () => {
    h = await createHarness({
      sim: { users: 3, docs: 80 },
      defaults: { incremental_cron: NEVER, full_cron: NEVER, inaccessible_grace_hours: 1 },
    });
    const [lagging, skipped] = h.sim.users;
    const notion = h.sim.servers.find((s) => s.source_type === "notion");
    const github = h.sim.servers.find((s) => s.source_type === "github");
    if (!lagging || !skipped || !notion || !github) throw new Error("the simulator lacks users or servers");
    expect((await h.sync()).outcome).toBe("succeeded");

    // One pair fails past the grace (it awaits a baseline), another is skipped.
    h.sim.setOutcome({ user: lagging, server_instance_id: github.server_instance_id }, { task: "FAILED" });
    h.sim.people.setAuth(skipped, github.server_instance_id, "not_authenticated");
    h.sim.clock.advance(2 * 3_600_000);
    await h.sync();
    // Every notion document gone: the full's sweep is held.
    for (const doc of h.sim.docs.list())
      if (doc.server_instance_id === notion.server_instance_id && !doc.deleted) h.sim.docs.remove(doc.docId);
    expect((await h.sync({ full: true })).outcome).toBe("partial");

    const { stdout } = await h.cli(["status", "--json"]);
    const status = (JSON.parse(stdout) as { mirrors: MirrorStatus[] }).mirrors[0] as MirrorStatus;
    expect(status.held_revocations).toBeGreaterThan(0);
    expect(status.pairs_awaiting_baseline).toBe(1);

    d = await startDaemon(h);
    const daemon = d;
    await until(async () => (await daemon.get("/readyz")).status === 200, "/readyz 200");
    const samples = parseMetrics((await d.get("/metrics")).body);
    const value = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;
    expect(value("syncmirror_held_revocations", MAIN)).toBe(status.held_revocations);
    expect(value("syncmirror_pairs_awaiting_baseline", MAIN)).toBe(1);
    expect(value("syncmirror_resources", MAIN)).toBe(status.live_resources);
    expect(value("syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" })).toBe(1);
    expect(value("syncmirror_problems", { ...MAIN, kind: "held_sweep" })).toBeGreaterThan(0);
    expect(value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" })).toBe(
      Date.parse(status.last_full_success_at as string) / 1000,
    );
    expect(value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" })).toBe(
      undefined,
    );
  });
});
