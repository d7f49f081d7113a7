/**
 * The API client's retries against the simulator over real HTTP (docs/reference/upstream-api.md#limits-and-retries):
 * 429 and 5xx with `Retry-After` in seconds or as an HTTP date, without it (exponential backoff
 * with full jitter), all within `api.max_attempts`. Sleeps are recorded, not waited.
 */
import { describe, expect, it } from "vitest";
import { type ApiClient, createApiClient } from "../../../src/api/client.js";
import { MAX_RETRY_AFTER_MS } from "../../../src/api/retry.js";
import { UnavailableError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import type { Simulator } from "../../../src/simulator/index.js";
import { startTestSimulator } from "../../helpers/simulator.js";

const PROJECTS = "GET /projects";

async function setup(maxAttempts = 4): Promise<{ sim: Simulator; api: ApiClient; sleeps: number[] }> {
  const { sim } = await startTestSimulator({ users: 1 });
  const sleeps: number[] = [];
  const api = createApiClient({
    baseUrl: sim.baseUrl,
    token: sim.token,
    timeoutMs: 10_000,
    maxAttempts,
    retriedBy: "next pass",
    log: silentLogger(),
    backoff: { baseMs: 100, maxMs: 1_000 },
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { sim, api, sleeps };
}

const attempts = (sim: Simulator) => sim.requests.filter((r) => r.route === "/projects").length;

describe("api client retries over HTTP", () => {
  it("waits the Retry-After seconds of a 429, then reads the answer", async () => {
    const { sim, api, sleeps } = await setup();
    sim.faults.inject(PROJECTS, { kind: "429", retryAfterSeconds: 7 });
    expect(await api.listProjects()).toEqual([expect.objectContaining({ id: sim.projectId })]);
    expect(sleeps).toEqual([7_000]);
    expect(attempts(sim)).toBe(2);
  });

  it("waits until the HTTP date of a Retry-After, on a 429 and on a 503", async () => {
    const { sim, api, sleeps } = await setup();
    sim.faults.inject(PROJECTS, { kind: "429", retryAfterSeconds: 120, retryAfterForm: "http-date" });
    sim.faults.inject(PROJECTS, { kind: "503", retryAfterSeconds: 40, retryAfterForm: "http-date" });
    await api.listProjects();
    expect(sleeps).toHaveLength(2);
    // An HTTP date has whole seconds: the wait ends within the second before the date.
    expect(sleeps[0]).toBeGreaterThan(118_000);
    expect(sleeps[0]).toBeLessThanOrEqual(121_000);
    expect(sleeps[1]).toBeGreaterThan(38_000);
    expect(sleeps[1]).toBeLessThanOrEqual(41_000);
    expect(attempts(sim)).toBe(3);
  });

  it("backs off exponentially with jitter when no Retry-After is given, on 429 and 5xx alike", async () => {
    const { sim, api, sleeps } = await setup();
    sim.faults.inject(PROJECTS, { kind: "429" });
    sim.faults.inject(PROJECTS, { kind: "502" });
    sim.faults.inject(PROJECTS, { kind: "500" });
    await api.listProjects();
    // Full jitter at random() = 0.5: half of 100, 200, 400 ms.
    expect(sleeps).toEqual([50, 100, 200]);
    expect(attempts(sim)).toBe(4);
  });

  it("caps a Retry-After far in the future", async () => {
    const { sim, api, sleeps } = await setup();
    sim.faults.inject(PROJECTS, { kind: "429", retryAfterSeconds: 86_400, retryAfterForm: "http-date" });
    await api.listProjects();
    expect(sleeps).toEqual([MAX_RETRY_AFTER_MS]);
  });

  it("gives up after api.max_attempts, with no sleep after the last attempt", async () => {
    const { sim, api, sleeps } = await setup(3);
    sim.faults.inject(PROJECTS, { kind: "503", retryAfterSeconds: 1, times: Infinity });
    const error = await api.listProjects().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as UnavailableError).message).toMatch(/after 3 attempts \(last: 503/);
    expect(attempts(sim)).toBe(3);
    expect(sleeps).toEqual([1_000, 1_000]);
  });
});
