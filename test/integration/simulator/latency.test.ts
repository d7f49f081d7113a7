import { describe, expect, it } from "vitest";
import { startTestSimulator } from "../../helpers/simulator.js";

const LATENCY_MS = 120;

describe("remote-latency mode", () => {
  it("holds every API request server-side for latencyMs before handling it", async () => {
    const { sim, api } = await startTestSimulator({ latencyMs: LATENCY_MS });
    const started = performance.now();
    const pending = api.get("/projects");
    // The request reached the server and waits there, unanswered, on the server's timer.
    while (sim.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(sim.requests[0]).toMatchObject({ route: "/projects", status: null });
    const response = await pending;
    expect(response.status).toBe(200);
    // A lower bound only (a timer never fires early by more than its 1 ms rounding).
    expect(performance.now() - started).toBeGreaterThanOrEqual(LATENCY_MS - 1);
    expect(sim.requests[0]?.status).toBe(200);
  });

  it("delays requests side by side, not one after another, and answers faults late too", async () => {
    const { sim, api } = await startTestSimulator({ latencyMs: LATENCY_MS });
    sim.faults.inject("GET /projects", { kind: "429", retryAfterSeconds: 1 });
    const pending = Promise.all([api.get("/projects"), api.get("/projects"), api.get("/projects")]);
    while (sim.requests.length < 3) await new Promise((resolve) => setImmediate(resolve));
    // All three arrived before any was answered: the delay is a timer, not a busy wait.
    expect(sim.requests.map((r) => r.status)).toEqual([null, null, null]);
    const answers = await pending;
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429]);
  });

  it("refuses a negative latency", async () => {
    await expect(startTestSimulator({ latencyMs: -1 })).rejects.toThrow(/latencyMs/);
  });
});
