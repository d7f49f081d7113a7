/**
 * Two harnesses over identical simulators (same seed, same clock start, same dataset): one pass
 * sequence runs clean on `clean`, the same sequence runs faulted or crashed on `hurt`, and the
 * final databases are compared with `snapshot` (db-snapshot.ts).
 */
import type { Counter } from "prom-client";
import { createHarness, type Harness, type HarnessOptions } from "./mirror-harness.js";

export const CLOCK_START = new Date("2026-01-05T09:00:00Z");

export interface Twins {
  clean: Harness;
  hurt: Harness;
  close(): Promise<void>;
}

export async function createTwins(options: HarnessOptions = {}): Promise<Twins> {
  const withClock: HarnessOptions = {
    ...options,
    sim: { seed: 7, ...options.sim, clock: { start: CLOCK_START, ...options.sim?.clock } },
  };
  const clean = await createHarness(withClock);
  const hurt = await createHarness(withClock);
  return {
    clean,
    hurt,
    async close() {
      await clean.close();
      await hurt.close();
    },
  };
}

/**
 * A trigger the mirror never sees, run to the end upstream: it moves the simulator's clock and ids
 * exactly as a trigger whose export the mirror refused did, so the next passes line up.
 */
export async function ghostTrigger(h: Harness): Promise<void> {
  const res = await fetch(`${h.sim.baseUrl}/sync-task`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.sim.token}`, "content-type": "application/json" },
    body: JSON.stringify({ sync_config_id: h.sim.syncConfigId }),
  });
  if (res.status !== 201) throw new Error(`ghost trigger answered ${res.status}: ${await res.text()}`);
  h.sim.runs.finishAll();
}

/** Sum of a counter's values whose labels include `labels`. */
export async function counterValue(
  counter: Counter<string>,
  labels: Record<string, string>,
): Promise<number> {
  const { values } = await counter.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Every counter but the API's (their polls depend on timing), by name and labels. */
export async function counters(harness: Harness): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await harness.metrics.registry.getMetricsAsJSON()) {
    if (String(metric.type) !== "counter" || metric.name.startsWith("syncmirror_api_")) continue;
    for (const v of metric.values) out[`${metric.name}${JSON.stringify(v.labels)}`] = v.value;
  }
  return out;
}
