/**
 * One trigger killed three times over its life, by `sync` and by `run` in turn, with documents
 * edited upstream while nothing runs: the trigger is POSTed once, the last start finishes it, and
 * the mirror and its change feed end as the service exported that trigger (each edited key one
 * upsert in its run, nothing for a key whose hash did not change), checked against the simulator,
 * not against a twin. The kills are at named points (the SYNCMIRROR_CRASH_AT seam).
 */
import { afterEach, expect, it } from "vitest";
import { type DaemonProcess, startDaemon } from "../../helpers/daemon.js";
import { databaseProblems } from "../../helpers/db-snapshot.js";
import { changes } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { passExport } from "../../helpers/walk-model.js";
import { NEVER } from "../daemon/setup.js";

let h: Harness | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.stop("SIGKILL");
  await h?.close();
  daemon = undefined;
  h = undefined;
});

it("a trigger killed in sync, in run and in sync again, with upstream edits between, is posted once and ends as exported", async () => {
  h = await createHarness({
    sim: { docs: 600 },
    defaults: { incremental_cron: NEVER, full_cron: NEVER },
  });
  const harness = h;
  expect((await harness.sync()).outcome).toBe("succeeded");
  const hashBefore = new Map(
    harness
      .query<{ key: string; content_hash: string }>("SELECT key, content_hash FROM resources")
      .map((r) => [r.key, r.content_hash]),
  );
  const seqBefore = changes(harness).at(-1)?.seq ?? 0;
  const posts = triggerPosts(harness);
  const live = harness.sim.docs.list();
  const edit = (from: number, to: number) => {
    for (const d of live.slice(from, to)) harness.sim.docs.edit(d.docId);
  };

  edit(0, 60);
  const first = await harness.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" });
  expect(first.code, first.stderr).toBeNull();
  edit(40, 100); // while nothing runs: the runs in flight collect these too

  daemon = await startDaemon(harness, { SYNCMIRROR_CRASH_AT: "mid-page:20" });
  expect((await daemon.exited).signal, daemon.stderr()).toBe("SIGKILL");
  daemon = undefined;
  const third = await harness.cli(["sync"], { SYNCMIRROR_CRASH_AT: "mid-page:30" });
  expect(third.code, third.stderr).toBeNull();
  expect(databaseProblems(harness)).toEqual([]);

  const last = await harness.cli(["sync"]);
  expect(last.code, last.stdout + last.stderr).toBe(0);

  expect(triggerPosts(harness) - posts, "one trigger upstream for the four starts").toBe(1);
  const [trigger] = harness.sim.runs.list();
  const exported = await passExport(harness, trigger?.trigger_id ?? null);
  expect(exported.hashes.size, "the export holds every edited key").toBeGreaterThanOrEqual(100);
  const stored = new Map(
    harness
      .query<{ key: string; content_hash: string }>("SELECT key, content_hash FROM resources")
      .map((r) => [r.key, r.content_hash]),
  );
  for (const [key, hash] of exported.hashes) expect(stored.get(key), key).toBe(hash);
  const changed = [...exported.hashes].filter(([key, hash]) => hashBefore.get(key) !== hash).map(([k]) => k);
  expect(changed).toHaveLength(100);
  const feed = changes(harness, seqBefore);
  expect(feed.map((c) => `${c.key} ${c.op}`).sort()).toEqual(changed.map((k) => `${k} upsert`).sort());
  expect(databaseProblems(harness)).toEqual([]);
});
