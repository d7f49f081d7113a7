/**
 * `syncmirror_skipped_pairs` describes the mirror's latest trigger (docs/reference/metrics.md): every pair it
 * skipped, listed or not, and no reason an earlier trigger gave that this one did not; a trigger
 * refused, or whose answer was lost, tells nothing of who is skipped and changes nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness | undefined;
let proxy: RewritingProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await h?.close();
  proxy = undefined;
  h = undefined;
});

async function skippedGauge(harness: Harness): Promise<Record<string, number>> {
  const metric = await harness.metrics.skippedPairs.get();
  return Object.fromEntries(
    metric.values.filter((v) => v.labels.mirror === "main").map((v) => [String(v.labels.reason), v.value]),
  );
}

const sum = (gauge: Record<string, number>) => Object.values(gauge).reduce((a, b) => a + b, 0);

/** A harness behind a rewriting proxy (closed after the test) whose first user is not signed in to its first server. */
async function oneUserSkippedBehindProxy() {
  const rewriting = await startRewritingProxy();
  proxy = rewriting;
  const harness = await createHarness({ sim: { docs: 10 }, api: { base_url: rewriting.baseUrl } });
  h = harness;
  rewriting.target = harness.sim.baseUrl;
  const [user] = harness.sim.users;
  const server = harness.sim.servers[0];
  if (!user || !server) throw new Error("the simulator has no user or server");
  harness.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
  return { harness, rewriting, user, server };
}

describe("syncmirror_skipped_pairs", () => {
  it("counts every pair the trigger skipped, the ones past the 100 it listed too", async () => {
    h = await createHarness({ sim: { users: 60, docs: 10 } });
    // 55 users x 2 servers not signed in: 110 skipped pairs, 100 of them listed.
    for (const user of h.sim.users.slice(0, 55))
      for (const server of h.sim.servers)
        h.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
    const summary = await h.sync();
    expect(summary.skipped_total).toBe(110);
    const gauge = await skippedGauge(h);
    expect(gauge).toMatchObject({ not_accessible: 100, unlisted: 10 });
    expect(sum(gauge)).toBe(110);

    for (const user of h.sim.users)
      for (const server of h.sim.servers)
        h.sim.people.setAuth(user, server.server_instance_id, "authenticated");
    await h.sync();
    expect(sum(await skippedGauge(h))).toBe(0);
  });

  it("keeps the pairs the last answered trigger skipped through a refused trigger and one whose answer was lost", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    const [user] = h.sim.users;
    const server = h.sim.servers[0];
    if (!user || !server) throw new Error("the simulator has no user or server");
    h.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
    await h.sync();
    expect(await skippedGauge(h)).toMatchObject({ not_accessible: 1 });

    h.sim.setPremium(false);
    expect((await h.sync()).outcome).toBe("refused");
    expect(await skippedGauge(h)).toMatchObject({ not_accessible: 1 });
    h.sim.setPremium(true);

    // The service starts the runs but its answer never arrives: the runs are adopted from the run list.
    h.sim.faults.inject("POST /sync-task", { kind: "drop-after" });
    const adopted = await h.sync();
    expect(h.query<{ adopted: number }>("SELECT adopted FROM triggers ORDER BY id DESC LIMIT 1")).toEqual([
      { adopted: 1 },
    ]);
    expect(adopted.outcome).not.toBe("refused");
    expect(await skippedGauge(h)).toMatchObject({ not_accessible: 1 });
  });

  it("drops a reason the latest trigger no longer gives, one the service added since too", async () => {
    const { harness, rewriting, user, server } = await oneUserSkippedBehindProxy();
    // A reason the upstream API does not list yet, as a later version of the service may send.
    rewriting.trigger = (body) => body.replaceAll('"not_accessible"', '"not_licensed"');
    await harness.sync();
    expect(await skippedGauge(harness)).toMatchObject({ not_licensed: 1, not_accessible: 0 });

    rewriting.trigger = undefined;
    harness.sim.people.setAuth(user, server.server_instance_id, "authenticated");
    await harness.sync();
    const gauge = await skippedGauge(harness);
    expect(sum(gauge)).toBe(0);
    expect(gauge.not_licensed ?? 0).toBe(0);
  });

  it("serves a reason that is free text, naming a user, as `other`: /metrics carries no email", async () => {
    const { harness, rewriting, user } = await oneUserSkippedBehindProxy();
    rewriting.trigger = (body) => body.replaceAll('"not_accessible"', `"${user} has no licence"`);
    const summary = await harness.sync();
    expect(summary.skipped_total).toBe(1);
    expect(await skippedGauge(harness)).toMatchObject({ other: 1, not_accessible: 0 });
    expect(await harness.metrics.registry.metrics()).not.toContain("@");
  });
});
