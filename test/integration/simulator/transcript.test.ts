import { describe, expect, it } from "vitest";
import { startTestSimulator, trigger } from "../../helpers/simulator.js";

describe("GET /sync-task/{id}/transcript", () => {
  it("requires source when the run has several sources", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const response = await api.get(`/sync-task/${syncId}/transcript`);
    expect(response.status).toBe(400);
    expect(response.body.detail).toMatch(/source/);
    expect((await api.get(`/sync-task/${syncId}/transcript`, { source: "nope" })).status).toBe(400);
  });

  it("needs no source for a single-source run; grows as the source runs", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const config = sim.configs.create({ serverIds: [sim.servers[0]?.server_instance_id ?? ""] });
    const syncId = (await trigger(api, config)).runs[0].sync_id;
    const read = async () => (await api.get(`/sync-task/${syncId}/transcript`)).body;
    expect(await read()).toMatchObject({
      status: "PENDING",
      messages: [],
      next_cursor: null,
      has_more: false,
    });
    sim.runs.advance(syncId);
    const running = await read();
    expect(running.status).toBe("RUNNING");
    expect(running.messages.length).toBeGreaterThan(0);
    sim.runs.advance(syncId);
    const done = await read();
    expect(done.status).toBe("COMPLETED");
    expect(done.messages.length).toBeGreaterThan(running.messages.length);
    expect(done.task_id).toBe(sim.runs.get(syncId).sources[0]?.task_id);
    for (const message of done.messages) {
      expect(Object.keys(message).sort()).toEqual([
        "content",
        "created_at",
        "message_type",
        "role",
        "sequence_number",
      ]);
    }
  });

  it("pages with limit (default 50, max 100) and an opaque cursor, including continue rounds", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    sim.setOutcome({}, { task: "INCOMPLETE" });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    for (let i = 0; i < 6; i++) {
      await api.post(`/sync-task/${syncId}/continue`, { message: `continue ${i}`, source: "notion" });
      sim.runs.finishAll();
    }
    const path = `/sync-task/${syncId}/transcript`;
    const whole = (await api.get(path, { source: "notion", limit: 100 })).body;
    expect(whole.messages.length).toBeGreaterThan(50);
    expect(whole.messages.map((m: { content: string }) => m.content)).toContain("continue 5");
    const firstDefault = (await api.get(path, { source: "notion" })).body;
    expect(firstDefault.messages).toHaveLength(50);
    const sequenceNumbers = async (limit: number) => {
      const seen: number[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const body = (await api.get(path, { source: "notion", limit, cursor })).body;
        seen.push(...body.messages.map((m: { sequence_number: number }) => m.sequence_number));
        if (!body.has_more) {
          expect(body.next_cursor).toBeNull();
          return seen;
        }
        cursor = body.next_cursor;
      }
      throw new Error("transcript did not end");
    };
    const bySeven = await sequenceNumbers(7);
    expect(bySeven).toEqual(Array.from({ length: bySeven.length }, (_, i) => i + 1));
    expect(await sequenceNumbers(100)).toEqual(bySeven);
    expect((await api.get(path, { source: "notion", limit: 101 })).status).toBe(400);
    expect((await api.get(path, { source: "notion", cursor: "bogus" })).status).toBe(400);
  });
});

describe("transcript times", () => {
  interface Stamped {
    content: string;
    created_at: string;
  }
  const times = (messages: Stamped[]) => messages.map((m) => Date.parse(m.created_at));
  const increasing = (ms: number[]) => ms.every((t, i) => i === 0 || t > (ms[i - 1] ?? t));

  it("stamps messages in order within each attempt: never after its finish, nor after now while it runs", async () => {
    const { sim, api } = await startTestSimulator({
      lifecycle: "manual",
      clock: { start: new Date("2026-05-01T00:00:00Z"), stepMs: 0 },
    });
    sim.setOutcome({}, { task: "INCOMPLETE", times: 1 });
    const config = sim.configs.create({ serverIds: [sim.servers[0]?.server_instance_id ?? ""] });
    const syncId = (await trigger(api, config)).runs[0].sync_id;
    const read = async (): Promise<Stamped[]> =>
      (await api.get(`/sync-task/${syncId}/transcript`, { limit: 100 })).body.messages;
    const source = () => sim.runs.get(syncId).sources[0] as { started_at: string; completed_at: string };

    sim.runs.advance(syncId);
    const startedMs = Date.parse(source().started_at);
    expect(times(await read()).every((t) => t >= startedMs && t <= sim.clock.now().getTime())).toBe(true);

    sim.clock.advance(60_000);
    sim.runs.advance(syncId);
    const firstFinishMs = Date.parse(source().completed_at);
    const first = times(await read());
    expect(first.length).toBeGreaterThan(5);
    expect(first.every((t) => t >= startedMs && t <= firstFinishMs)).toBe(true);
    expect(increasing(first)).toBe(true);

    sim.clock.advance(5_000);
    const continuedMs = sim.clock.now().getTime();
    await api.post(`/sync-task/${syncId}/continue`, { message: "go on" });
    const resumed = times((await read()).slice(first.length));
    expect(resumed).toEqual([continuedMs]);

    sim.clock.advance(60_000);
    sim.runs.advance(syncId);
    const whole = await read();
    const finalMs = Date.parse(source().completed_at);
    expect(times(whole).slice(0, first.length)).toEqual(first);
    expect(whole[first.length]?.content).toBe("go on");
    const second = times(whole.slice(first.length));
    expect(second[0]).toBe(continuedMs);
    expect(second.every((t) => t <= finalMs)).toBe(true);
    expect(increasing(times(whole))).toBe(true);
  });
});
