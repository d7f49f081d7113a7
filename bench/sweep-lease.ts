/**
 * A sweep that revokes every access row of a large mirror, on SQLite, timed from inside the pass:
 * the sweep's wall time, its transactions (count, longest), the longest the event loop went
 * without turning (what the lease's renewal timer, the HTTP probes and other mirrors wait for),
 * and how many times the lease was renewed during the sweep. The pass runs under the mirror's
 * lease as `syncmirror sync` runs it, so a sweep that starves the renewal past the lease fails
 * here as it fails there.
 *
 *   npx tsx bench/sweep-lease.ts [--docs 100000] [--lease-seconds 60]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Registry } from "prom-client";
import { stringify } from "yaml";
import { loadConfig } from "../src/config.js";
import { createLeaseHolder } from "../src/lease-holder.js";
import { silentLogger } from "../src/log.js";
import { createMetrics } from "../src/metrics.js";
import { withMirrorLease } from "../src/mirror-lease.js";
import { createRuntime } from "../src/runtime.js";
import { startSimulator } from "../src/simulator/index.js";
import type { CrashPoint } from "../src/sync/context.js";
import { syncMirror } from "../src/sync/sync-mirror.js";
import { bindMirror } from "../src/sync-configs/bind.js";

const { values } = parseArgs({
  options: {
    docs: { type: "string", default: "100000" },
    "lease-seconds": { type: "string", default: "60" },
  },
});
const docs = Number(values.docs);
const leaseSeconds = Number(values["lease-seconds"]);

const sim = await startSimulator({ users: 1, docs });
const dir = mkdtempSync(join(tmpdir(), "syncmirror-sweep-bench-"));
const configPath = join(dir, "syncmirror.yaml");
const env = { ...process.env, SYNCMIRROR_BENCH_TOKEN: sim.token };
writeFileSync(
  configPath,
  stringify({
    api: { base_url: sim.baseUrl, token_env: "SYNCMIRROR_BENCH_TOKEN" },
    database: { path: join(dir, "mirror.db"), lease_seconds: leaseSeconds },
    http: { listen: "127.0.0.1:0" },
    defaults: { poll_initial_seconds: 0.01, poll_max_seconds: 0.05 },
    mirrors: [{ name: "main", sync_config_id: sim.syncConfigId }],
  }),
);
const io = {
  stdout: process.stdout,
  stderr: process.stderr,
  env,
  signal: new AbortController().signal,
  isTty: false,
};

/** One pass of `main` under its lease; `watch` sees the runtime's store and the pass's kill points. */
async function pass(
  full: boolean,
  watch?: (store: Record<string, unknown>, point: (p: CrashPoint) => void) => (p: CrashPoint) => void,
) {
  const config = loadConfig(configPath, env);
  const runtime = await createRuntime(config, io, {
    lock: true,
    retriedBy: "next pass",
    log: silentLogger(),
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
  });
  try {
    const holder = createLeaseHolder();
    const store = runtime.store as unknown as Record<string, unknown>;
    const leased = await withMirrorLease(
      {
        store: runtime.store,
        mirror: "main",
        holder,
        leaseSeconds,
        signal: io.signal,
        log: runtime.log,
        metrics: runtime.metrics,
      },
      async (signal, fence) => {
        const ctx = runtime.syncContext(signal, fence, holder);
        const crashPoint = watch ? watch(store, ctx.crashPoint) : ctx.crashPoint;
        const mirror = await bindMirror(config.mirrors[0] as never, runtime.store);
        return syncMirror(mirror, { ...ctx, crashPoint }, { full, allowMassDelete: true, dryRun: false });
      },
    );
    return leased.taken ? leased.value : undefined;
  } finally {
    await runtime.close();
  }
}

await pass(true);
const rows = sim.docs.list().length;
for (const d of sim.docs.list()) sim.docs.remove(d.docId);

let sweepStart = 0;
let transactions = 0;
let longestTransaction = 0;
let renewals = 0;
let lastTick = 0;
let longestStall = 0;
const probe = setInterval(() => {
  const now = performance.now();
  if (sweepStart > 0 && lastTick > 0) longestStall = Math.max(longestStall, now - lastTick);
  lastTick = now;
}, 5);
const started = performance.now();
let outcome: string;
try {
  const summary = await pass(true, (store, crashPoint) => {
    const transaction = store.transaction as (fn: unknown) => Promise<unknown>;
    store.transaction = async (fn: unknown) => {
      const t0 = performance.now();
      try {
        return await transaction(fn);
      } finally {
        if (sweepStart > 0) {
          transactions++;
          longestTransaction = Math.max(longestTransaction, performance.now() - t0);
        }
      }
    };
    const leases = store.leases as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const renew = leases.renew?.bind(leases);
    leases.renew = (...args) => {
      if (sweepStart > 0) renewals++;
      return renew?.(...args) as Promise<unknown>;
    };
    return (point) => {
      if (point === "before-sweep") {
        sweepStart = performance.now();
        lastTick = sweepStart;
      }
      crashPoint(point);
    };
  });
  outcome = summary?.outcome ?? "not started";
} catch (error) {
  outcome = `${(error as Error).name}: ${(error as Error).message}`;
}
const ended = performance.now();
clearInterval(probe);
// A pass that never let the probe run again until it ended stalled the loop to the end.
if (sweepStart > 0) longestStall = Math.max(longestStall, ended - Math.max(lastTick, sweepStart));
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
console.log(
  JSON.stringify({
    docs: rows,
    leaseSeconds,
    outcome,
    pass: s(ended - started),
    sweep: s(ended - sweepStart),
    transactions,
    longestTransaction: s(longestTransaction),
    longestEventLoopStall: s(longestStall),
    leaseRenewalsDuringSweep: renewals,
  }),
);
await sim.close();
rmSync(dir, { recursive: true, force: true });
