/**
 * A sweep that revokes more of a pair's keys than a batch (500) commits them a batch a transaction,
 * so no transaction grows with what a pair holds (one that did held the store's queue, and every
 * lease renewal of the process behind it, past the lease). Stopped between two batches, the
 * resumed pass ends where an uninterrupted one ends: the same tables, the same counts in the
 * history, the same counters, and the mass-delete guard's decision (and the approval it used)
 * taken once, on the counts before any revocation.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { CrashPoint } from "../../../src/sync/context.js";
import { snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { counters, createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

const U1 = "user1@example.com";
const U2 = "user2@example.com";

/** A stop at the first point between two batches of one pair's revocations. */
function stopBetweenBatches(): { crashPoint: (point: CrashPoint) => void; stopped: () => boolean } {
  let stopped = false;
  return {
    crashPoint(point) {
      if (point !== "between-revocations" || stopped) return;
      stopped = true;
      throw new Error("stopped between two batches of revocations");
    },
    stopped: () => stopped,
  };
}

/** Every notion document removed upstream: each user's notion pair misses all of its keys. */
function removeNotionDocs(h: Harness): void {
  const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
  for (const d of h.sim.docs.list()) if (d.server_instance_id === notion) h.sim.docs.remove(d.docId);
}

/** The full passes' counts as the history keeps them, oldest first. */
const history = (h: Harness) =>
  h.query("SELECT mode, outcome, revoked, deleted, held, sweeps_held FROM triggers ORDER BY id");

const accessRows = (h: Harness, user: string) =>
  Number(
    h.query<{ n: number }>("SELECT count(*) AS n FROM resource_access WHERE user_email = ?", user)[0]?.n,
  );

describe("revocations of more than a batch", () => {
  it("commit a batch at a time; stopped between two, the resumed pass ends as an uninterrupted one", {
    timeout: 120_000,
  }, async () => {
    twins = await createTwins({ sim: { users: 2, docs: 1200, serversPerType: { notion: 1 } } });
    const { clean, hurt } = twins;
    for (const h of [clean, hurt]) {
      expect((await h.sync()).outcome).toBe("succeeded");
      h.sim.people.leaveProject(U2);
    }
    const held = accessRows(hurt, U2);
    expect(held).toBeGreaterThan(500);
    expect((await clean.sync({ full: true })).outcome).toBe("succeeded");

    const stop = stopBetweenBatches();
    await hurt.sync({ full: true }, { crashPoint: stop.crashPoint }).catch(() => undefined);
    expect(stop.stopped()).toBe(true);
    // One batch committed on its own; the pass has not finished.
    expect(accessRows(hurt, U2)).toBe(held - 500);
    expect(history(hurt).at(-1)).toMatchObject({ outcome: null, revoked: 500 });

    expect((await hurt.sync({ full: true })).outcome).toBe("succeeded");
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
    expect(history(hurt)).toEqual(history(clean));
    expect(await counters(hurt)).toEqual(await counters(clean));
    expect(accessRows(hurt, U2)).toBe(0);
  });

  it("apply an approved sweep once decided: resumed, it is not judged again on the keys left", {
    timeout: 120_000,
  }, async () => {
    twins = await createTwins({ sim: { users: 1, docs: 1200 } });
    const { clean, hurt } = twins;
    for (const h of [clean, hurt]) {
      expect((await h.sync()).outcome).toBe("succeeded");
      removeNotionDocs(h);
      expect((await h.sync({ full: true })).outcome).toBe("partial");
      const approved = await h.cli(["approve-sweep", "--mirror", "main"]);
      expect(approved.code, approved.stderr).toBe(0);
    }
    expect((await clean.sync({ full: true })).outcome).toBe("succeeded");

    const stop = stopBetweenBatches();
    await hurt.sync({ full: true }, { crashPoint: stop.crashPoint }).catch(() => undefined);
    expect(stop.stopped()).toBe(true);
    expect(history(hurt).at(-1)).toMatchObject({ outcome: null, revoked: 500 });

    expect((await hurt.sync({ full: true })).outcome).toBe("succeeded");
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
    expect(history(hurt)).toEqual(history(clean));
    expect(await counters(hurt)).toEqual(await counters(clean));
    const approvals = (h: Harness) => h.query("SELECT up_to, used FROM sweep_approvals");
    expect(approvals(hurt)).toEqual(approvals(clean));
    expect(approvals(clean)).toEqual([{ up_to: expect.any(Number), used: expect.any(Number) }]);
  });
});

/**
 * One user, one notion server and `docs` documents, mirrored; then every document removed
 * upstream, so the next full pass's sweep revokes each of the pair's keys (`held`), a batch at a
 * time.
 */
async function mirrorThenRemoveAll(docs: number): Promise<{ h: Harness; held: number }> {
  const h = await createHarness({ sim: { users: 1, docs, serversPerType: { notion: 1 } } });
  expect((await h.sync()).outcome).toBe("succeeded");
  const held = accessRows(h, U1);
  expect(held).toBeGreaterThan(4 * 500);
  removeNotionDocs(h);
  return { h, held };
}

describe("between two batches of revocations", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("the timers already due run, as the lease's renewal does", { timeout: 120_000 }, async () => {
    ({ h } = await mirrorThenRemoveAll(2300));
    // At each stop between two batches: whether the timer set at the stop before has run.
    const ran: boolean[] = [];
    let timer: { fired: boolean } | null = null;
    const crashPoint = (point: CrashPoint) => {
      if (point !== "between-revocations") return;
      if (timer) ran.push(timer.fired);
      const next = { fired: false };
      setTimeout(() => {
        next.fired = true;
      }, 0);
      timer = next;
    };
    expect((await h.sync({ full: true, allowMassDelete: true }, { crashPoint })).outcome).toBe("succeeded");
    expect(ran.length).toBeGreaterThanOrEqual(3);
    expect(ran).toEqual(ran.map(() => true));
    expect(accessRows(h, U1)).toBe(0);
  });

  it("a sweep that outlasts its lease keeps it: renewed between batches", { timeout: 120_000 }, async () => {
    const mirrored = await mirrorThenRemoveAll(2300);
    h = mirrored.h;
    // A loaded machine: each batch holds the thread for longer than a renewal period (a third of
    // the lease), the sweep for longer than the lease. Renewed only after the sweep, the lease
    // expires under it and the pass ends with LeaseLostError, its last batches rolled back.
    const leaseSeconds = 2;
    const crashPoint = (point: CrashPoint) => {
      if (point === "between-revocations") holdThread(leaseSeconds * 400);
    };
    const summary = await h.sync({ full: true, allowMassDelete: true }, { crashPoint, leaseSeconds });
    expect(summary.outcome).toBe("succeeded");
    expect(accessRows(h, U1)).toBe(0);
    expect(history(h).at(-1)).toMatchObject({ outcome: "succeeded", revoked: mirrored.held });
  });
});

/** Blocks this thread, as a statement on a loaded machine does: no timer runs meanwhile. */
function holdThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
