/**
 * Crash matrix: the real CLI is killed with SIGKILL at a named point (the env-guarded seam
 * SYNCMIRROR_CRASH_AT=<point>:<n>, see src/runtime.ts), restarted, and its final database compared
 * with an uninterrupted run over an identical simulator. Deterministic: the kill happens the n-th
 * time the code reaches the point, not after a delay.
 */
import { afterEach, describe, expect, it } from "vitest";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

const CONTINUE = "POST /sync-task/{sync_id}/continue";

interface CrashCase {
  name: string;
  /** `<point>:<n>` for SYNCMIRROR_CRASH_AT. */
  crashAt: string;
  docs: number;
  /** Passes (in-process, identical on both twins) before the crashing command. */
  before?: (h: Harness) => Promise<void>;
  /** The crashing command's arguments; the restart repeats them. */
  args: string[];
  defaults?: Record<string, unknown>;
}

/** A full pass, then upstream changes a full sweep acts on: a deleted document and a leaver. */
async function baselineThenChanges(h: Harness): Promise<void> {
  expect((await h.sync()).outcome).toBe("succeeded");
  const docs = h.sim.docs.list().filter((d) => d.visibleTo.includes("user1@example.com"));
  for (const d of docs.slice(0, 3)) h.sim.docs.remove(d.docId);
  h.sim.people.leaveProject("user3@example.com");
}

const CASES: CrashCase[] = [
  {
    name: "after the trigger's intent is stored, before its POST is sent",
    crashAt: "after-intent:1",
    docs: 60,
    args: ["sync"],
  },
  {
    name: "after the trigger POST, before its response is stored",
    crashAt: "after-trigger-post:1",
    docs: 60,
    args: ["sync"],
  },
  { name: "inside a page transaction", crashAt: "mid-page:700", docs: 1000, args: ["sync"] },
  { name: "between two pages of one export", crashAt: "between-pages:1", docs: 1000, args: ["sync"] },
  {
    name: "before a sweep",
    crashAt: "before-sweep:1",
    docs: 60,
    before: baselineThenChanges,
    args: ["sync", "--full"],
  },
  {
    name: "in the middle of a sweep (after the first run's sweep transaction)",
    crashAt: "mid-sweep:1",
    docs: 60,
    before: baselineThenChanges,
    args: ["sync", "--full"],
  },
  {
    name: "between two batches of a leaver's revocations (each pair of the leaver holds more than a batch)",
    crashAt: "between-revocations:1",
    docs: 1600,
    before: baselineThenChanges,
    args: ["sync", "--full"],
  },
  {
    name: "during a continue of an INCOMPLETE source",
    crashAt: "during-continue:1",
    docs: 60,
    before: async (h) => {
      h.sim.setOutcome({ user: "user1@example.com" }, { task: "INCOMPLETE", times: 1 });
    },
    args: ["sync"],
    defaults: { continue_incomplete: 1 },
  },
];

describe("crash matrix: kill -9, restart, compare with an uninterrupted run", () => {
  it.each(CASES)("$name ($crashAt)", async (c) => {
    twins = await createTwins({ sim: { docs: c.docs }, defaults: c.defaults });
    const { clean, hurt } = twins;
    await c.before?.(clean);
    await c.before?.(hurt);
    const triggersBefore = triggerPosts(hurt);

    const reference = await clean.sync({ full: c.args.includes("--full") });
    expect(reference.outcome, reference.message).toBe("succeeded");

    const crashed = await hurt.cli(c.args, { SYNCMIRROR_CRASH_AT: c.crashAt });
    expect(crashed.code, `expected SIGKILL at ${c.crashAt}; stderr: ${crashed.stderr}`).toBeNull();
    expect(databaseProblems(hurt)).toEqual([]);

    const resumed = await hurt.cli(c.args);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);

    expect(databaseProblems(hurt)).toEqual([]);
    expect(triggerPosts(hurt) - triggersBefore, "exactly one trigger upstream").toBe(1);
    expect(answered(hurt, CONTINUE, 200), "each continue arrives once").toBe(answered(clean, CONTINUE, 200));
    if (c.defaults?.continue_incomplete) expect(answered(clean, CONTINUE, 200)).toBe(1);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});

describe("a continue whose answer is lost", () => {
  it("is read back, not sent twice: the source that ran again is not continued a second time", async () => {
    twins = await createTwins({ sim: { docs: 40 }, defaults: { continue_incomplete: 1 } });
    const { clean, hurt } = twins;
    const server = clean.sim.servers[0]?.server_instance_id;
    for (const h of [clean, hurt])
      h.sim.setOutcome(
        { user: "user1@example.com", server_instance_id: server },
        { task: "INCOMPLETE", times: 2 },
      );
    hurt.sim.faults.inject(CONTINUE, { kind: "drop-after" });

    const reference = await clean.sync();
    const summary = await hurt.sync();
    expect(summary.outcome).toBe("partial");
    expect(summary.outcome).toBe(reference.outcome);
    expect(hurt.sim.faults.pending()).toEqual([]);
    expect(hurt.sim.requests.filter((r) => `${r.method} ${r.route}` === CONTINUE)).toHaveLength(1);
    expect(hurt.query("SELECT continue_pending FROM runs WHERE continue_pending IS NOT NULL")).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
