/**
 * The rules of a mirror's schedule (docs/scaling-out.md#scheduling, docs/console-history.md): each scheduled time
 * recorded once, one due pass at most (coalescing, a full superseding an incremental), pauses
 * skipping scheduled passes but not requested ones, and which pass consumes which due.
 */
import { describe, expect, it } from "vitest";
import {
  consumeDue,
  newSchedule,
  pauseSchedule,
  recordTick,
  requestPass,
  resumeSchedule,
  startableDue,
} from "../../src/store/schedule-rules.js";

const T0 = "2026-03-10T02:45:00.000Z";
const T1 = "2026-03-10T03:00:00.000Z";
const T2 = "2026-03-10T03:15:00.000Z";
const fresh = () => newSchedule("main", { incremental: T0, full: T0 });

describe("schedule rules", () => {
  it("records a scheduled time once: the first records it, a replica coming second finds it", () => {
    const first = recordTick(fresh(), "incremental", T1, "schedule");
    expect(first.outcome).toBe("due");
    expect(first.schedule.due).toEqual({ mode: "incremental", reason: "schedule", since: T1, by: null });
    const again = recordTick(first.schedule, "incremental", T1, "schedule");
    expect(again).toEqual({ schedule: first.schedule, outcome: "seen" });
    expect(recordTick(first.schedule, "incremental", T0, "schedule").outcome, "an older time").toBe("seen");
  });

  it("coalesces a time falling while a pass is due into that one pass, raised to full by a full", () => {
    const due = recordTick(fresh(), "incremental", T1, "schedule").schedule;
    const coalesced = recordTick(due, "incremental", T2, "schedule");
    expect(coalesced.outcome).toBe("coalesced");
    expect(coalesced.schedule.due).toEqual(due.due);
    const raised = recordTick(coalesced.schedule, "full", T2, "catch-up");
    expect(raised.outcome).toBe("coalesced");
    expect(raised.schedule.due, "still due since the first time").toEqual({
      mode: "full",
      reason: "catch-up",
      since: T1,
      by: null,
    });
  });

  it("lets a due full supersede an incremental falling with it or while it waits, which is not a skip", () => {
    const full = recordTick(fresh(), "full", T1, "schedule");
    const incremental = recordTick(full.schedule, "incremental", T1, "schedule");
    expect(incremental.outcome).toBe("superseded");
    expect(incremental.schedule.due).toEqual(full.schedule.due);
    expect(incremental.schedule.incrementalSlot).toBe(T1);
    expect(recordTick(incremental.schedule, "incremental", T2, "schedule").outcome).toBe("superseded");
  });

  it("skips scheduled times while paused and drops a scheduled due, but keeps and runs a requested one", () => {
    const due = recordTick(fresh(), "incremental", T1, "schedule").schedule;
    const paused = pauseSchedule(due, "ana@host", T1);
    expect(paused?.due, "a paused mirror is never due").toBeNull();
    expect(pauseSchedule(paused ?? fresh(), "bo@host", T2), "already paused").toBeNull();
    const skipped = recordTick(paused ?? fresh(), "full", T2, "schedule");
    expect(skipped.outcome).toBe("paused");
    expect(skipped.schedule.fullSlot, "the time is spent: resume does not catch it up").toBe(T2);
    const requested = requestPass(skipped.schedule, "full", "http 127.0.0.1", T2);
    expect(startableDue(requested)).toEqual({
      mode: "full",
      reason: "requested",
      since: T2,
      by: "http 127.0.0.1",
    });
    expect(pauseSchedule(resumeSchedule(requested, T2) ?? fresh(), "ana@host", T2)?.due?.reason).toBe(
      "requested",
    );
    expect(resumeSchedule(fresh(), T2), "not paused").toBeNull();
  });

  it("spends at resume the times that fell while paused with nobody to record them", () => {
    const paused = pauseSchedule(fresh(), "ana@host", T0) ?? fresh();
    const resumed = resumeSchedule(paused, T2) ?? fresh();
    expect(recordTick(resumed, "full", T1, "catch-up").outcome, "fell while paused").toBe("seen");
    const later = "2026-03-10T03:30:00.000Z";
    expect(recordTick(resumed, "incremental", later, "schedule").outcome, "after the resume").toBe("due");
  });

  it("marks a due pass requested when an operator asks for it, so a pause keeps it", () => {
    const due = recordTick(fresh(), "incremental", T1, "schedule").schedule;
    const asked = requestPass(due, "incremental", "ana@host", T2);
    expect(asked.due).toEqual({ mode: "incremental", reason: "requested", since: T1, by: "ana@host" });
    expect(recordTick(asked, "full", T2, "schedule").schedule.due?.reason, "stays requested").toBe(
      "requested",
    );
  });

  it("lets a full pass consume any due, an incremental only an incremental one", () => {
    const incremental = recordTick(fresh(), "incremental", T1, "schedule").schedule;
    expect(consumeDue(incremental, "incremental")?.schedule.due).toBeNull();
    expect(consumeDue(incremental, "full")?.due.mode).toBe("incremental");
    const full = recordTick(fresh(), "full", T1, "schedule").schedule;
    expect(consumeDue(full, "incremental"), "a full snapshot is still owed").toBeNull();
    expect(consumeDue(full, "full")?.due).toEqual({ mode: "full", reason: "schedule", since: T1, by: null });
    expect(consumeDue(fresh(), "full")).toBeNull();
  });
});
