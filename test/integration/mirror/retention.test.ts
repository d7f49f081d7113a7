/**
 * `history.keep_days` on the suite's store: the daemon prunes at start-up the passes that finished
 * longer ago, with their runs and errors, and the problems not seen for as long, but never what
 * the sync still reads; the next pass plans and triggers exactly as it would have.
 */
import { describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import { spawnCli, until, waitForPort } from "../../helpers/daemon.js";
import { execute } from "../../helpers/db-write.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, EVERY_SECOND, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const DAY_MS = 86_400_000;

describe("history retention", () => {
  it("prunes passes and problems older than history.keep_days at start-up, keeping what the sync reads", async () => {
    const h = suite.use(
      await createHarness({ sim: { docs: 10, users: 1 }, defaults: { since_overlap_seconds: 0 } }),
    );
    const full = await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    h.sim.setOutcome({ server_instance_id: notion }, { task: "FAILED", error: "gone for a while", times: 1 });
    await h.sync();
    await h.sync();
    const last = await h.sync();
    const history = async () => {
      const r = await h.cli(["history", "--json", "--limit", "500"]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as HistoryJson;
    };
    const before = (await history()).passes;
    expect(before.map((p) => p.mode)).toEqual(["incremental", "incremental", "incremental", "full"]);
    const [newest, , withError, oldest] = before;
    expect(withError?.errors).toHaveLength(1);
    // Everything finished 100 days ago; one problem was last seen then, another today.
    const old = new Date(Date.now() - 100 * DAY_MS).toISOString();
    await execute(h, "UPDATE triggers SET finished_at = ?", old);
    const stale = `INSERT INTO problems (mirror, subject, kind, user_email, reason, first_seen_at, last_seen_at)
       VALUES ('main', ?, 'skipped_pair', 'user1@example.com', 'not_accessible', ?, ?)`;
    await execute(h, stale, "stale", old, old);
    await execute(h, stale, "fresh", old, new Date().toISOString());

    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const d = await suite.daemon(h);
    const pruned = await until(() => d.logs().find((l) => l.msg === "history pruned"), "the start-up prune");
    expect(pruned).toMatchObject({ passes: 2, problems: 1, keep_days: 90 });
    await d.stop();

    // Kept: the newest pass (the bound of a full owed, and the holder of the newest run), the last
    // finished full (the mirror's last full outcome); the middle ones are gone with their runs.
    const after = (await history()).passes;
    expect(after.map((p) => p.id)).toEqual([newest?.id, oldest?.id]);
    expect(after[0]?.trigger_id).toBe(last.trigger_id);
    expect(after[1]?.trigger_id).toBe(full.trigger_id);
    expect(
      h.query<{ n: number }>("SELECT count(*) AS n FROM runs WHERE trigger_row_id = ?", withError?.id)[0]?.n,
    ).toBe(0);
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM pass_errors")[0]?.n).toBe(0);
    const problems = JSON.parse((await h.cli(["problems", "--json"])).stdout) as ProblemsJson;
    expect(problems.problems.map((p) => p.reason)).toEqual(["not_accessible"]);
    expect(problems.problems[0]?.last_seen_at).not.toBe(old);

    const next = await h.cli(["sync", "--json"]);
    expect(next.code, next.stderr).toBe(0);
    const summary = JSON.parse(next.stdout).mirrors[0];
    expect(summary).toMatchObject({
      mode: "incremental",
      adopted: false,
      resumed: false,
      outcome: "succeeded",
    });
    expect(h.sim.runs.list().filter((r) => r.trigger_id === summary.trigger_id)).toHaveLength(1);
  });

  it("prunes with sync too, so a mirror kept by cron alone, with no daemon, keeps history.keep_days", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 10, users: 1 } }));
    const full = await h.sync();
    await h.sync();
    await h.sync();
    const old = new Date(Date.now() - 100 * DAY_MS).toISOString();
    await execute(h, "UPDATE triggers SET finished_at = ?", old);
    const sync = await h.cli(["sync", "--json"]);
    expect(sync.code, sync.stderr).toBe(0);
    const next = JSON.parse(sync.stdout).mirrors[0];
    const r = await h.cli(["history", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    // The two incremental passes in between went; the one just run and the last full are kept.
    const passes = (JSON.parse(r.stdout) as HistoryJson).passes;
    expect(passes.map((p) => p.trigger_id)).toEqual([next.trigger_id, full.trigger_id]);
  });

  it("stops within 10 s, starting no pass, when SIGTERM arrives while it prunes a long history at start-up", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 10, users: 1 } }));
    await h.sync();
    // A history of a year of passes, say, first pruned after an upgrade or a lower keep_days.
    const old = new Date(Date.now() - 200 * DAY_MS).toISOString();
    await execute(
      h,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
       INSERT INTO triggers (mirror, mode, state, trigger_id, intent_at, finished_at, outcome)
       SELECT 'main', 'incremental', 'done', 'pruned-' || i, ?, ?, 'succeeded' FROM n`,
      old,
      old,
    );
    // Due at once if the schedules ever start.
    setCrons(h, { incremental_cron: EVERY_SECOND, full_cron: NEVER });
    const posts = triggerPosts(h);
    const d = spawnCli(["run", "--config", h.configPath], { ...h.env, LOG_LEVEL: "info" });
    await waitForPort(d);
    const stopped = await d.stop("SIGTERM");
    expect(stopped, d.stderr()).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(10_000);
    expect(triggerPosts(h) - posts, "no pass started once the stop was asked for").toBe(0);
  });
});
