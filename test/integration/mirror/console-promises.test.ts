/**
 * docs/console-history.md through the built CLI on the suite's store, where history.test.ts,
 * problems.test.ts and approve-sweep.test.ts leave it open: a pass killed (kill -9) after meeting an
 * error and resumed by the next process is one entry with each attempt's errors once; a dry run
 * lists the errors it met; `--mirror` keeps to one mirror, paging included; a bad `--limit` is one
 * line; a problem met again keeps its first sighting; a held sweep clears when a later full pass
 * sweeps within the guard; an approval is taken once.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemJson, ProblemsJson } from "../../../src/console/problems.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";
const serverOf = (type: string) =>
  h.sim.servers.find((s) => s.source_type === type)?.server_instance_id as string;

async function json<T>(args: string[]): Promise<T> {
  const r = await h.cli([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const problemsOf = async (kind: ProblemJson["kind"]) =>
  (await json<ProblemsJson>(["problems"])).problems.filter((p) => p.kind === kind);

describe("history", () => {
  it("lists the errors a dry run met, as the real pass would", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    await h.sync();
    h.sim.setOutcome(
      { user: U1, server_instance_id: serverOf("notion") },
      { task: "FAILED", error: "quota exceeded while reading Roadmap", times: 1 },
    );
    const dry = await h.cli(["sync", "--full", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(1);
    const summary = JSON.parse(dry.stdout).mirrors[0];
    expect(summary.outcome).toBe("partial");
    const [pass] = (await json<HistoryJson>(["history"])).passes;
    expect(pass).toMatchObject({ dry_run: true, outcome: "partial" });
    const met = [
      expect.objectContaining({
        user_email: U1,
        source: "notion",
        error: "FAILED: quota exceeded while reading Roadmap",
      }),
    ];
    expect(pass?.errors).toEqual(met);
    expect(summary.errors).toEqual(met);
  });

  it("holds in one entry a pass killed after meeting an error and resumed by the next process, each error once", async () => {
    h = await createHarness({ sim: { docs: 30 }, maxAttempts: 1 });
    await h.sync();
    h.sim.setOutcome(
      { user: U1, server_instance_id: serverOf("notion") },
      { task: "FAILED", error: "quota exceeded", times: 1 },
    );
    const killed = await h.cli(["sync", "--full"], { SYNCMIRROR_CRASH_AT: "before-sweep:1" });
    expect(killed.code, "killed by SIGKILL").toBeNull();
    const [inFlight] = (await json<HistoryJson>(["history"])).passes;
    expect(inFlight).toMatchObject({ state: "in_flight", outcome: null, ended_at: null });
    expect((await h.cli(["sync"], { SYNCMIRROR_TEST_TOKEN: "not-the-token" })).code).toBe(1);
    const done = await h.cli(["sync", "--json"]);
    expect(done.code).toBe(1);
    expect(JSON.parse(done.stdout).mirrors[0]).toMatchObject({ resumed: true, outcome: "partial" });

    const { passes } = await json<HistoryJson>(["history"]);
    expect(passes).toHaveLength(2);
    const [pass] = passes;
    expect(pass).toMatchObject({
      id: inFlight?.id,
      trigger_id: inFlight?.trigger_id,
      mode: "full",
      state: "done",
      outcome: "partial",
      resumed: true,
      started_at: inFlight?.started_at,
      runs: { completed: h.sim.users.length - 1, failed: 1 },
    });
    expect(pass?.errors).toEqual([
      expect.objectContaining({ user_email: U1, source: "notion", error: "FAILED: quota exceeded" }),
      expect.objectContaining({ sync_id: null, error: expect.stringMatching(/was rejected \(401/) }),
    ]);
    expect(pass?.errors[0]?.replica, "each attempt names its own process").not.toBe(pass?.errors[1]?.replica);
  });

  it("keeps to one mirror with --mirror, its pages included", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const other = h.sim.configs.create({ name: "other", serverIds: [serverOf("github")] });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "second", sync_config_id: other });
    });
    for (let i = 0; i < 3; i++) expect((await h.cli(["sync"])).code).toBe(0);
    const all = (await json<HistoryJson>(["history"])).passes;
    expect(all.map((p) => p.mirror).sort()).toEqual(["main", "main", "main", "second", "second", "second"]);

    const paged: number[] = [];
    let before: number | null = null;
    do {
      const cursor: string[] = before === null ? [] : ["--before", String(before)];
      const page: HistoryJson = await json<HistoryJson>([
        "history",
        "--mirror",
        "second",
        "--limit",
        "1",
        ...cursor,
      ]);
      expect(page.passes.map((p) => p.mirror)).toEqual(["second"]);
      paged.push(...page.passes.map((p) => p.id));
      before = page.next_before;
    } while (before !== null);
    expect(paged).toEqual(all.filter((p) => p.mirror === "second").map((p) => p.id));
  });

  it("refuses a --limit that is not a whole number of 1 or more: exit 2, one line, nothing on stdout", async () => {
    h = await createHarness({ sim: { docs: 5 } });
    await h.sync();
    for (const command of ["history", "problems"])
      for (const limit of ["abc", "-1", "1.5", ""]) {
        const r = await h.cli([command, "--limit", limit, "--json"]);
        const what = `${command} --limit "${limit}"`;
        expect(r.code, what).toBe(2);
        expect(r.stdout, what).toBe("");
        expect(r.stderr.trimEnd().split("\n"), what).toEqual([
          expect.stringMatching(/^syncmirror: --limit: /),
        ]);
      }
  });
});

describe("problems", () => {
  it("keeps a skipped pair's first sighting when a later pass meets it again, and moves its last", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    h.sim.people.setAuth(U1, serverOf("notion"), "not_authenticated");
    await h.sync();
    const [first] = await problemsOf("skipped_pair");
    expect(first?.last_seen_at).toBe(first?.first_seen_at);
    await h.sync({ full: true });
    const [again] = await problemsOf("skipped_pair");
    expect(again?.first_seen_at).toBe(first?.first_seen_at);
    expect(Date.parse(again?.last_seen_at ?? "")).toBeGreaterThan(Date.parse(first?.last_seen_at ?? ""));
  });

  it("clears a source problem of a pair that never held access once its user has left the project", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    h.sim.setOutcome(
      { user: U1, server_instance_id: serverOf("notion") },
      { task: "FAILED", error: "no access" },
    );
    await h.sync();
    expect(await problemsOf("failed_source")).toEqual([expect.objectContaining({ user_email: U1 })]);

    // The sync config is for all users: one who left is in none of the next trigger's runs.
    h.sim.people.leaveProject(U1);
    expect((await h.sync()).mode).toBe("incremental");
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("succeeded");
    expect((await json<ProblemsJson>(["problems"])).problems).toEqual([]);
  });

  it("clears a held sweep when a later full pass sweeps the pair within the guard", async () => {
    h = await createHarness({ sim: { docs: 80, users: 1 } });
    await h.sync();
    const notion = serverOf("notion");
    const hidden = pickDocs(h, 0, (d) => d.server_instance_id === notion).slice(0, 36);
    for (const d of hidden) h.sim.docs.setVisibility(d.docId, []);
    expect((await h.sync({ full: true })).counts.sweeps_held).toBe(1);
    expect(await problemsOf("held_sweep")).toEqual([
      expect.objectContaining({ user_email: U1, server_instance_id: notion, count: 36 }),
    ]);

    // Shared again: the next full snapshot misses nothing of the pair.
    for (const d of hidden) h.sim.docs.setVisibility(d.docId, [U1]);
    expect((await h.sync({ full: true })).outcome).toBe("succeeded");
    expect(await problemsOf("held_sweep")).toEqual([]);
    expect((await json<ProblemsJson>(["problems"])).counts.main?.held_sweep).toBe(0);
  });
});

describe("approve-sweep", () => {
  it("is taken once: a sweep held after the approved one was applied is held again until approved again", async () => {
    h = await createHarness({ sim: { docs: 120, users: 1 } });
    await h.sync();
    const notion = serverOf("notion");
    const notionDocs = () => pickDocs(h, 0, (d) => d.server_instance_id === notion);
    for (const d of notionDocs().slice(0, 40)) h.sim.docs.remove(d.docId);
    expect((await h.sync({ full: true })).counts.held_revocations).toBe(40);
    expect((await h.cli(["approve-sweep", "--mirror", "main"])).code).toBe(0);
    expect((await h.sync({ full: true })).counts.access_revoked).toBe(40);
    expect((await h.cli(["approve-sweep", "--mirror", "main"])).code, "nothing held now").toBe(1);

    for (const d of notionDocs()) h.sim.docs.remove(d.docId);
    const held = await h.sync({ full: true });
    expect(held).toMatchObject({ outcome: "partial", counts: { access_revoked: 0, held_revocations: 20 } });
    expect((await h.sync({ full: true })).counts.held_revocations, "still held, pass after pass").toBe(20);
    const [newest, , applied] = (await json<HistoryJson>(["history"])).passes;
    expect(newest?.sweep_approval).toBeNull();
    expect(applied?.sweep_approval).toMatchObject({ up_to: 40, used: 40 });

    expect((await h.cli(["approve-sweep", "--mirror", "main"])).code).toBe(0);
    expect((await h.sync({ full: true })).counts.access_revoked).toBe(20);
  });
});
