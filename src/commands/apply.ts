/**
 * `syncmirror apply [--adopt] [--prune]`: makes the service match the sync configs declared in the
 * file, mirror by mirror, each under the mirror's lease (no pass starts meanwhile), and prints what
 * it did. A config of the declared name that syncmirror did not create is taken over only with
 * `--adopt`; nothing is deleted upstream without `--prune`. Exit 0 done, 1 problems, 2 bad config.
 */
import { SyncmirrorError } from "../errors.js";
import { createLeaseHolder } from "../lease-holder.js";
import { withMirrorLease } from "../mirror-lease.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { isDatabaseError } from "../store/store.js";
import { type ApplyFlags, type ApplyResult, applyEntry, upToDate } from "../sync-configs/apply.js";
import { formatApply } from "../sync-configs/format.js";
import { type PlanEntry, planSyncConfigs } from "../sync-configs/plan.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const apply: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("apply", args, {
      adopt: { type: "boolean", default: false },
      prune: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    const flags = { adopt: values.adopt ?? false, prune: values.prune ?? false };
    const runtime = await createRuntime(config, io, { lock: true, retriedBy: "operator" });
    try {
      const entries = await planSyncConfigs(config, {
        api: runtime.api,
        store: runtime.store,
        signal: io.signal,
      });
      const results: ApplyResult[] = [];
      for (const entry of entries) {
        if (io.signal.aborted) break;
        if (entry.action === "not_declared") continue;
        const result = await applyLeased(runtime, entry, flags, io.signal);
        // Logged as a failed pass of `sync` is, so what reads stderr alone still sees why (exit 1).
        if (result.done === "refused")
          runtime.log.error(
            { mirror: result.mirror, err: result.message },
            "the declared sync config could not be applied",
          );
        results.push(result);
      }
      io.stdout.write(formatApply(results));
      return io.signal.aborted || results.some((r) => r.done === "refused") ? 1 : 0;
    } finally {
      await runtime.close();
    }
  });

/** One entry under its mirror's lease; an upstream error refuses that mirror only. */
async function applyLeased(
  runtime: Runtime,
  entry: PlanEntry,
  flags: ApplyFlags,
  signal: AbortSignal,
): Promise<ApplyResult> {
  const { store, api, log, config } = runtime;
  const refused = (message: string): ApplyResult => ({
    mirror: entry.mirror,
    done: "refused",
    message,
    syncConfigId: entry.syncConfigId,
    fullOwed: false,
  });
  const leased = await withMirrorLease(
    {
      store,
      mirror: entry.mirror,
      holder: createLeaseHolder(),
      leaseSeconds: config.database.leaseSeconds,
      signal,
      log,
      metrics: runtime.metrics,
    },
    (leaseSignal) => applyEntry(entry, { api, store, now: () => new Date(), signal: leaseSignal }, flags),
  ).catch((error: unknown) => {
    if (!(error instanceof SyncmirrorError) || isDatabaseError(error)) throw error;
    return { taken: true as const, value: refused(error.message) };
  });
  if (leased.taken) return leased.value;
  const settled = upToDate(entry, (await store.mirrors.get(entry.mirror))?.syncConfigId);
  if (settled) return settled;
  const holder = (await store.leases.holders()).get(entry.mirror)?.holderName ?? "another process";
  return refused(`${holder} is running this mirror's pass: nothing was changed; apply again once it ends`);
}
