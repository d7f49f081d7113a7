/**
 * SIGTERM in the middle of a page transaction (docs/reference/cli.md#signals; issue 12): the page in progress
 * ends whole, the pass stops before the next one and exits 1 saying how to resume, nothing is
 * killed, and the next `sync` resumes at the checkpoint to the state of a run never stopped.
 */
import { afterEach, describe, expect, it } from "vitest";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";
import { buildOnce } from "../daemon/setup.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

describe("SIGTERM during a page transaction", () => {
  it("finishes the page, stops the pass with exit 1, and the next sync resumes from there", async () => {
    await buildOnce();
    twins = await createTwins({ sim: { docs: 1500, users: 1 } });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");

    // The 700th row is in the third page of 250.
    const stopped = await hurt.cli(["sync"], { SYNCMIRROR_CRASH_AT: "mid-page:700:SIGTERM" });
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stderr).toMatch(/SIGTERM received|run sync again/);
    expect(databaseProblems(hurt)).toEqual([]);
    const [run] = hurt.query<{ next_offset: number | null }>("SELECT next_offset FROM runs");
    const [stored] = hurt.query<{ n: number }>("SELECT count(*) AS n FROM resources");
    expect(run?.next_offset).toBe(750);
    expect(stored?.n).toBe(750);

    const resumed = await hurt.cli(["sync"]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(triggerPosts(hurt)).toBe(1);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
