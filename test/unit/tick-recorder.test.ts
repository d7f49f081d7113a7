/**
 * Scheduled times recorded in the database with an injected clock (docs/scaling-out.md#scheduling): the catch-up
 * after a gap runs only the latest time that fell, once; a mirror first seen owes nothing unless its
 * passes on record are older; two processes record a time once; what a time coalesced into is named;
 * an unreachable database is counted once and the time caught up when it answers.
 */
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { MirrorConfig } from "../../src/config.js";
import { DatabaseError } from "../../src/errors.js";
import { silentLogger } from "../../src/log.js";
import { createMetrics, type Metrics } from "../../src/metrics.js";
import { openEmptyStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { createTickRecorder } from "../../src/tick-recorder.js";

const NEVER = "0 0 3 1 1 *";
const mirror = (crons: Partial<Pick<MirrorConfig, "incrementalCron" | "fullCron">>) =>
  ({ name: "main", incrementalCron: NEVER, fullCron: NEVER, timezone: "UTC", ...crons }) as MirrorConfig;

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

function recorder(
  m: MirrorConfig,
  s: Store,
  metrics = createMetrics(new Registry(), { defaultMetrics: false }),
) {
  return { metrics, rec: createTickRecorder({ mirrors: [m], store: s, log: silentLogger(), metrics }) };
}

async function skips(metrics: Metrics, reason: string): Promise<number> {
  return (await metrics.ticksSkipped.get()).values
    .filter((v) => v.labels.reason === reason)
    .reduce((n, v) => n + v.value, 0);
}

describe("tick recorder", () => {
  it("after two days down, makes only the latest full due, once, and the incremental falls under it", async () => {
    store = await openEmptyStore();
    const m = mirror({ incrementalCron: "*/15 * * * *", fullCron: "0 3 * * *" });
    await recorder(m, store).rec.record(new Date("2026-03-10T10:00:30Z"));
    expect((await store.schedules.find("main"))?.due, "a mirror first seen owes nothing").toBeNull();
    const { rec, metrics } = recorder(m, store);
    await rec.record(new Date("2026-03-12T10:07:00Z"));
    const schedule = await store.schedules.find("main");
    expect(schedule?.due).toEqual({
      mode: "full",
      reason: "catch-up",
      since: "2026-03-12T03:00:00.000Z",
      by: null,
    });
    expect(schedule?.incrementalSlot).toBe("2026-03-12T10:00:00.000Z");
    await rec.record(new Date("2026-03-12T10:08:00Z"));
    expect(await skips(metrics, "waiting"), "the incremental is covered, not skipped").toBe(0);
    expect(rec.nextAt()?.toISOString()).toBe("2026-03-12T10:15:00.000Z");
  });

  it("records a time that fell while it ran as scheduled, however late its look", async () => {
    store = await openEmptyStore();
    const { rec } = recorder(mirror({ incrementalCron: "*/15 * * * *" }), store);
    await rec.record(new Date("2026-03-10T10:14:00Z"));
    await rec.record(new Date("2026-03-10T10:15:40Z"));
    expect((await store.schedules.find("main"))?.due).toMatchObject({
      reason: "schedule",
      since: "2026-03-10T10:15:00.000Z",
    });
  });

  it("owes a mirror first seen the full scheduled after its newest full pass on record", async () => {
    store = await openEmptyStore();
    await store.triggers.createIntent({
      mirror: "main",
      mode: "full",
      since: null,
      knownBefore: null,
      intentAt: "2026-03-09T03:00:04.000Z",
      allowMassDelete: false,
      dryRun: false,
      startedBy: null,
      startedByName: null,
      dueAt: null,
      dueReason: null,
    });
    const { rec } = recorder(mirror({ fullCron: "0 3 * * *" }), store);
    await rec.record(new Date("2026-03-10T09:00:00Z"));
    expect((await store.schedules.find("main"))?.due).toMatchObject({ mode: "full", reason: "catch-up" });
  });

  it("records a time once when two processes look at it", async () => {
    store = await openEmptyStore();
    const m = mirror({ incrementalCron: "*/15 * * * *" });
    const a = recorder(m, store);
    const b = recorder(m, store);
    await a.rec.record(new Date("2026-03-10T10:14:00Z"));
    await b.rec.record(new Date("2026-03-10T10:14:00Z"));
    await a.rec.record(new Date("2026-03-10T10:15:00Z"));
    await b.rec.record(new Date("2026-03-10T10:15:00.200Z"));
    await a.rec.record(new Date("2026-03-10T10:30:00Z"));
    await b.rec.record(new Date("2026-03-10T10:30:00Z"));
    const counted = (await skips(a.metrics, "waiting")) + (await skips(b.metrics, "waiting"));
    expect(counted, "10:30 coalesced into the 10:15 pass still due, counted by one process").toBe(1);
  });

  it("names what a time coalesced into: a pass in flight (running, or a dead holder's trigger), or a pass waiting", async () => {
    const s = await openEmptyStore();
    store = s;
    const { rec, metrics } = recorder(mirror({ incrementalCron: "*/15 * * * *" }), s);
    const tick = async (iso: string) => rec.record(new Date(iso));
    await tick("2026-03-10T10:00:00Z");
    await tick("2026-03-10T10:15:00Z");
    const lease = await s.leases.acquire("main", { id: "other", name: "web-2:1", scope: null }, 60);
    await tick("2026-03-10T10:30:00Z");
    expect(await skips(metrics, "in_flight")).toBe(1);
    await s.leases.release({ mirror: "main", holder: "other", epoch: lease?.epoch ?? 0 });
    await s.triggers.createIntent({
      mirror: "main",
      mode: "incremental",
      since: null,
      knownBefore: null,
      intentAt: "2026-03-10T10:20:00.000Z",
      allowMassDelete: false,
      dryRun: false,
      startedBy: "other",
      startedByName: "web-2:1",
      dueAt: null,
      dueReason: null,
    });
    await tick("2026-03-10T10:45:00Z");
    expect(await skips(metrics, "in_flight")).toBe(2);
    expect(await skips(metrics, "waiting")).toBe(0);
  });

  it("counts a time falling while the mirror's pass runs as in_flight, the first too, and makes one pass due after it", async () => {
    const s = await openEmptyStore();
    store = s;
    const { rec, metrics } = recorder(mirror({ incrementalCron: "*/15 * * * *" }), s);
    const tick = async (iso: string) => rec.record(new Date(iso));
    await tick("2026-03-10T10:00:00Z");
    await s.leases.acquire("main", { id: "other", name: "web-2:1", scope: null }, 3600);
    await tick("2026-03-10T10:15:00Z");
    expect(await skips(metrics, "in_flight"), "it started no pass: one runs").toBe(1);
    await tick("2026-03-10T10:30:00Z");
    expect(await skips(metrics, "in_flight")).toBe(2);
    expect((await s.schedules.find("main"))?.due, "one pass due after the running one").toMatchObject({
      mode: "incremental",
      since: "2026-03-10T10:15:00.000Z",
    });
  });

  it("counts a time the database could not record once, and catches it up when the database answers", async () => {
    const s = await openEmptyStore();
    store = s;
    let down = true;
    const flaky: Store = {
      ...s,
      transaction: (fn) =>
        down ? Promise.reject(new DatabaseError("lost the connection")) : s.transaction(fn),
    };
    const { rec, metrics } = recorder(mirror({ incrementalCron: "*/15 * * * *" }), flaky);
    down = false;
    await rec.record(new Date("2026-03-10T10:14:00Z"));
    down = true;
    await rec.record(new Date("2026-03-10T10:15:00Z"));
    await rec.record(new Date("2026-03-10T10:15:01Z"));
    expect(await skips(metrics, "db_unreachable")).toBe(1);
    down = false;
    await rec.record(new Date("2026-03-10T10:17:00Z"));
    expect((await s.schedules.find("main"))?.due).toMatchObject({
      reason: "catch-up",
      since: "2026-03-10T10:15:00.000Z",
    });
  });

  it.each([
    // 02:30 never shows on the spring-forward day: it runs when the clocks jump, at 03:00.
    {
      day: "the spring-forward day",
      zone: "Europe/Berlin",
      cron: "30 2 * * *",
      from: "2026-03-28T22:00:00Z",
      down: null,
      to: "2026-03-29T04:00:00Z",
      ran: "2026-03-29T01:00:00.000Z",
    },
    {
      day: "the spring-forward day",
      zone: "America/New_York",
      cron: "30 2 * * *",
      from: "2026-03-08T04:00:00Z",
      down: null,
      to: "2026-03-08T10:00:00Z",
      ran: "2026-03-08T07:00:00.000Z",
    },
    // 02:30 shows twice on the fall-back day: it runs at the first, and a process down across it
    // and started again between the two catches it up.
    {
      day: "the fall-back day",
      zone: "Europe/Berlin",
      cron: "30 2 * * *",
      from: "2026-10-24T22:00:00Z",
      down: null,
      to: "2026-10-25T04:00:00Z",
      ran: "2026-10-25T00:30:00.000Z",
    },
    {
      day: "the fall-back day, no process running across its first 02:30",
      zone: "Europe/Berlin",
      cron: "30 2 * * *",
      from: "2026-10-24T22:00:00Z",
      down: ["2026-10-25T00:20:00Z", "2026-10-25T00:45:00Z"],
      to: "2026-10-25T04:00:00Z",
      ran: "2026-10-25T00:30:00.000Z",
    },
    {
      day: "the fall-back day",
      zone: "America/New_York",
      cron: "30 1 * * *",
      from: "2026-11-01T03:00:00Z",
      down: null,
      to: "2026-11-01T09:00:00Z",
      ran: "2026-11-01T05:30:00.000Z",
    },
    {
      day: "the fall-back day, no process running across its first 01:30",
      zone: "America/New_York",
      cron: "30 1 * * *",
      from: "2026-11-01T03:00:00Z",
      down: ["2026-11-01T05:20:00Z", "2026-11-01T06:00:00Z"],
      to: "2026-11-01T09:00:00Z",
      ran: "2026-11-01T05:30:00.000Z",
    },
  ])("runs a daily $cron once on $day in $zone", async ({ zone, cron, from, down, to, ran }) => {
    store = await openEmptyStore();
    const s = store;
    const m = { ...mirror({ fullCron: cron }), timezone: zone };
    let { rec } = recorder(m, s);
    await rec.record(new Date(from));
    const before = (await s.schedules.find("main"))?.fullSlot;
    const recorded = new Set<string>();
    // No process looks between these two; the one at the second is a new process's start-up.
    const [stopMs = Number.NaN, startMs = Number.NaN] = (down ?? []).map((d) => Date.parse(d));
    for (let t = Date.parse(from) + 60_000; t <= Date.parse(to); t += 60_000) {
      if (t >= stopMs && t < startMs) continue;
      if (t === startMs) rec = recorder(m, s).rec;
      await rec.record(new Date(t));
      const slot = (await s.schedules.find("main"))?.fullSlot;
      if (slot !== undefined && slot !== before) recorded.add(slot);
    }
    expect([...recorded]).toEqual([ran]);
  });
});
