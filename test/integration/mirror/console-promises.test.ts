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
});

describe("problems", () => {
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
});
