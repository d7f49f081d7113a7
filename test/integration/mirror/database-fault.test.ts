/**
 * One error contract (docs/reference/sync-semantics.md#outcomes): the database failing mid-pass says nothing of
 * the upstream run. On either store (a disk that fills on SQLite, a connection terminated on
 * PostgreSQL) `sync` exits 1 with one line that says what to do, nothing is settled (the trigger
 * stays in flight, no run is marked failed, no outcome is recorded), and the next `sync` resumes
 * the same trigger to the state a clean run reaches.
 */
import { afterEach, describe, expect, it } from "vitest";
import { syncWithDatabaseFault } from "../../helpers/database-fault.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

describe("a database that fails mid-pass", () => {
  it("exits 1 saying what to do, keeps the trigger in flight unsettled, and the next pass resumes it", async () => {
    twins = await createTwins({ sim: { docs: 400 } });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");

    const failed = await syncWithDatabaseFault(hurt, clean);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/^syncmirror: .+, then run again: the mirror resumes where it stopped\n$/m);
    expect(failed.stderr, "no stack trace").not.toMatch(/^\s+at /m);
    expect(failed.stdout).toBe("");
    expect(hurt.query("SELECT state, outcome FROM triggers")).toEqual([{ state: "active", outcome: null }]);
    expect(hurt.query("SELECT count(*) AS n FROM runs WHERE ingest = 'failed'")).toEqual([{ n: 0 }]);
    expect(hurt.query("SELECT last_outcome FROM mirror_state")).toEqual([{ last_outcome: null }]);
    expect(databaseProblems(hurt)).toEqual([]);

    const resumed = await hurt.cli(["sync"]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(triggerPosts(hurt)).toBe(1);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
