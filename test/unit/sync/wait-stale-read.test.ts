/**
 * On PostgreSQL the wait loop reads the runs beside this process's page transactions, so a read
 * may be answered from before an export's last commit. The loop must not take that stale "still
 * open" for a run to export again.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../src/log.js";
import type { Run, Trigger } from "../../../src/store/types.js";
import type { MirrorPass } from "../../../src/sync/context.js";
import { type RunReader, waitAndIngest } from "../../../src/sync/wait.js";
import { storedRun } from "../../helpers/store-fixtures.js";

const CREATED = "2026-01-05T09:00:00Z";

const MIRROR = {
  name: "main",
  runTimeoutMinutes: 60,
  pollInitialSeconds: 1,
  pollMaxSeconds: 2,
  continueIncomplete: 0,
};
const TRIGGER = { id: 1, triggerId: "trigger-1", startedAt: CREATED, intentAt: CREATED } as Trigger;

const run = (syncId: string): Run =>
  storedRun({ syncId, mirror: "main", userEmail: `${syncId}@example.com`, createdAt: CREATED });

describe("the wait loop", () => {
  it("exports a run once when its export ends while the runs are being read", async () => {
    const state = new Map(["a", "b"].map((id) => [id, run(id)]));
    const exported: string[] = [];
    let endB: (() => void) | undefined;
    // B's export ends after a read's snapshot was taken, before the read answers: the loop reads
    // every run after a listing, and only the runs whose export ended on the wakes between.
    const answerLate = async <T>(snapshot: T): Promise<T> => {
      const end = endB;
      endB = undefined;
      if (end) {
        end();
        await new Promise((resolve) => setImmediate(resolve));
      }
      return snapshot;
    };
    const ofTrigger = () => answerLate([...state.values()].map((r) => ({ ...r })));
    const get = (syncId: string) => answerLate({ ...(state.get(syncId) as Run) });
    const read: RunReader = async (_pass, _trigger, r) => {
      exported.push(r.syncId);
      const done = () => {
        (state.get(r.syncId) as Run).ingest = "done";
      };
      // A's export ends at once; B's first export ends during the read after A's.
      if (r.syncId === "b" && exported.filter((id) => id === "b").length === 1) {
        await new Promise<void>((resolve) => {
          endB = () => {
            done();
            resolve();
          };
        });
      } else done();
    };
    const ignore = async () => {};
    const pass = {
      mirror: MIRROR,
      ctx: {
        store: {
          runs: { ofTrigger, get, setIngest: ignore, updateStatus: ignore },
          transaction: (fn: (tx: unknown) => Promise<unknown>) =>
            fn({ runs: { insertMany: ignore, updateStatus: ignore } }),
        },
        api: {
          async *listAllRuns() {
            for (const id of state.keys())
              yield {
                sync_id: id,
                user_email: `${id}@example.com`,
                status: "completed",
                created_at: CREATED,
                sources: [],
              };
          },
        },
        log: silentLogger(),
        now: () => new Date(CREATED),
        signal: new AbortController().signal,
        // The poll timer never fires: only exports ending wake the loop.
        sleep: (_ms: number, signal: AbortSignal) =>
          new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
        ingestConcurrency: 2,
      },
    } as unknown as MirrorPass;

    await waitAndIngest(pass, TRIGGER, read);

    expect(exported).toEqual(["a", "b"]);
  });

  it("sends a continue once when an export ends during the round that sends it", async () => {
    // x turns INCOMPLETE at the second listing; y's export, started in the first round, ends while
    // x's continue is being sent, so that round reads y stale and is cut short. The next round
    // must see x as the continue left it (running), not as the round began.
    const state = new Map([
      ["x", { ...run("x"), status: "running" }],
      ["y", { ...run("y"), status: "completed" }],
    ]);
    const at = (id: string) => state.get(id) as Run;
    const continued: string[] = [];
    let listings = 0;
    let endY: (() => void) | undefined;
    const copy = (r: Run): Run => ({ ...r });
    const read: RunReader = async (_pass, _trigger, r) => {
      if (r.syncId === "y") await new Promise<void>((resolve) => (endY = resolve));
      at(r.syncId).ingest = "done";
    };
    const ignore = async () => {};
    const pass = {
      mirror: { ...MIRROR, continueIncomplete: 1, continueMessage: "continue" },
      ctx: {
        store: {
          runs: {
            ofTrigger: async () => [...state.values()].map(copy),
            get: async (syncId: string) => copy(at(syncId)),
            setIngest: ignore,
            updateStatus: async (syncId: string, status: string) => {
              at(syncId).status = status;
            },
            countContinue: async (syncId: string, pending: Run["continuePending"]) => {
              at(syncId).continuesSent++;
              at(syncId).continuePending = pending;
            },
            clearContinuePending: async (syncId: string) => {
              at(syncId).continuePending = null;
            },
          },
          transaction: (fn: (tx: unknown) => Promise<unknown>) =>
            fn({ runs: { insertMany: ignore, updateStatus: ignore } }),
        },
        api: {
          async *listAllRuns() {
            listings++;
            if (listings === 2) at("x").status = "incomplete";
            // The continue worked: the listing after it shows x finished.
            if (listings > 2 && at("x").continuesSent > 0) at("x").status = "completed";
            for (const r of state.values())
              yield {
                sync_id: r.syncId,
                user_email: r.userEmail,
                status: r.status,
                created_at: CREATED,
                sources: [],
              };
          },
          getRun: async (syncId: string) => ({
            sync_id: syncId,
            status: at(syncId).status,
            created_at: CREATED,
            sources: [{ source: "notion", status: "INCOMPLETE", completed_at: CREATED }],
          }),
          continueRun: async (syncId: string) => {
            continued.push(syncId);
            endY?.();
            endY = undefined;
            await new Promise((resolve) => setImmediate(resolve));
          },
        },
        log: silentLogger(),
        now: () => new Date(CREATED),
        signal: new AbortController().signal,
        // The poll timer fires at once: every wake without an export ending lists the runs.
        sleep: () => new Promise((resolve) => setImmediate(resolve)),
        crashPoint: () => {},
        ingestConcurrency: 2,
      },
    } as unknown as MirrorPass;

    await waitAndIngest(pass, TRIGGER, read);

    expect(continued).toEqual(["x"]);
    expect(at("x").ingest).toBe("done");
  });
});
