/**
 * `syncmirror sync`: one pass now for the named mirrors (default all). Exit 0 when every mirror
 * succeeded, 1 when any failed or was partial, 2 for bad usage or config.
 */
import type { Config, MirrorConfig } from "../config.js";
import { pruneOnce } from "../console/prune-history.js";
import { AbortedError, SyncConfigNotAppliedError, UsageError } from "../errors.js";
import { createLeaseHolder } from "../lease-holder.js";
import { withMirrorLease } from "../mirror-lease.js";
import { createRuntime } from "../runtime.js";
import type { Mode } from "../store/types.js";
import type { PassOptions, Progress } from "../sync/context.js";
import { DRY_RUN_LIST_LIMIT } from "../sync/dry-run.js";
import { passError } from "../sync/fail-run.js";
import { exitCodeFor } from "../sync/outcome.js";
import { passErrorJson } from "../sync/pass-error-json.js";
import {
  type DryRunReport,
  leaseBusyMessage,
  type MirrorSummary,
  notStartedSummary,
} from "../sync/summary.js";
import { APPLY_HELD_SWEEP } from "../sync/sweep.js";
import { syncMirror } from "../sync/sync-mirror.js";
import { bindMirror, checkBindings } from "../sync-configs/bind.js";
import type { Command, CommandIo } from "./command.js";
import {
  type JsonFailure,
  loadCommandConfig,
  parseCommandArgs,
  selectMirrors,
  withErrors,
  withJsonFailure,
  writeJson,
} from "./common.js";

export const sync: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("sync", args, {
      mirror: { type: "string", multiple: true },
      full: { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
      "allow-mass-delete": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    });
    if (values["dry-run"] && !values.full)
      throw new UsageError("--dry-run needs --full: only a full snapshot sweeps");
    const config = loadCommandConfig(values.config, io);
    const mirrors = selectMirrors(config, values.mirror ?? []);
    const json = values.json ?? false;
    const dryRun = values["dry-run"] ?? false;
    const options: PassOptions = {
      full: values.full ?? false,
      allowMassDelete: values["allow-mass-delete"] ?? false,
      dryRun,
      ...(dryRun ? { dryRunsBefore: [] } : {}),
    };
    const summaries: MirrorSummary[] = [];
    // Stopped early (the lock held, the database gone): the passes that ended, and why.
    await withJsonFailure(
      io,
      json,
      () => stopsAsOne(io, () => runPasses(config, mirrors, options, { io, json, summaries })),
      (failure) => syncJson(io, summaries, failure),
    );
    if (io.isTty && !json) io.stdout.write("\r\x1b[K");
    // Stopped before every mirror had its pass: not "all succeeded", whatever the ones that ran did.
    const code = io.signal.aborted ? 1 : exitCodeFor(summaries.map((s) => s.outcome));
    if (json) writeJson(io, syncJson(io, summaries));
    else io.stdout.write(formatTable(summaries));
    return code;
  });

/**
 * A signal stops the passes wherever it lands (at start-up, on a request, waiting for the runs,
 * between two mirrors), and each place ended in its own way: a request "was aborted", or no error
 * at all. Every stop ends here as one error saying which signal and how to resume, so stderr has
 * its one line and `--json` its `error`, as for any other stop.
 */
async function stopsAsOne(io: CommandIo, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    if (!io.signal.aborted || !(error instanceof AbortedError)) throw error;
  }
  if (!io.signal.aborted) return;
  const reason = io.signal.reason instanceof Error ? io.signal.reason.message : "stop requested";
  throw new AbortedError(
    `${reason}: sync stopped; run sync again to resume where it stopped (a trigger in flight is resumed, not sent again)`,
  );
}

/** One pass per mirror, one after the other, each summary pushed as it ends. */
async function runPasses(
  config: Config,
  mirrors: readonly MirrorConfig[],
  options: PassOptions,
  out: { io: CommandIo; json: boolean; summaries: MirrorSummary[] },
): Promise<void> {
  const { io } = out;
  const runtime = await createRuntime(config, io, { lock: true, retriedBy: "next pass" });
  const onStop = () =>
    runtime.log.warn(
      { reason: io.signal.reason instanceof Error ? io.signal.reason.message : "stop requested" },
      "stopping: the current page commits; run sync again to resume",
    );
  if (io.signal.aborted) onStop();
  else io.signal.addEventListener("abort", onStop, { once: true });
  try {
    await checkBindings(config, runtime.store);
    const holder = createLeaseHolder();
    const mode = options.full ? "full" : "incremental";
    // A pass that never started is `failed` with its reason as its one error, like a pass that
    // failed as a whole; no trigger row was written, so the history has no entry for it.
    const notStarted = (mirror: string, message: string, as: Mode = mode) =>
      notStartedSummary(
        mirror,
        as,
        passErrorJson(passError({ now: () => new Date(), replica: holder }, message)),
      );
    for (const mirror of mirrors) {
      if (io.signal.aborted) break;
      // The same per-mirror lease as a replica's, so this may run beside daemons on PostgreSQL.
      const leased = await withMirrorLease(
        {
          store: runtime.store,
          mirror: mirror.name,
          holder,
          leaseSeconds: config.database.leaseSeconds,
          signal: io.signal,
          log: runtime.log,
          metrics: runtime.metrics,
        },
        async (signal, fence) => {
          const ctx = runtime.syncContext(signal, fence, holder);
          if (io.isTty && !out.json) ctx.onProgress = (p) => drawProgress(io, p);
          try {
            return await syncMirror(await bindMirror(mirror, runtime.store), ctx, options);
          } catch (error) {
            if (!(error instanceof SyncConfigNotAppliedError)) throw error;
            // The first pass of a sync config created upstream is a full one, as `status` says.
            return notStarted(mirror.name, error.message, "full");
          }
        },
      );
      if (leased.taken) out.summaries.push(leased.value);
      else {
        const busy = (await runtime.store.leases.holders()).get(mirror.name);
        out.summaries.push(notStarted(mirror.name, leaseBusyMessage(busy?.holderName ?? null)));
      }
    }
    if (options.dryRunsBefore) await runtime.store.dryRun.release(options.dryRunsBefore);
    // A mirror kept by `sync` from cron, with no daemon, keeps `history.keep_days` too.
    if (!io.signal.aborted) await pruneOnce(runtime.store, config.history.keepDays, runtime.log, io.signal);
  } finally {
    io.signal.removeEventListener("abort", onStop);
    await runtime.close();
  }
}

/**
 * `outcome` is `succeeded` when every selected mirror succeeded, else `not_all_succeeded`; `error`
 * is there when the command stopped before finishing its mirrors (the database in use, a signal).
 */
function syncJson(io: CommandIo, summaries: MirrorSummary[], error?: JsonFailure): object {
  const allSucceeded = !error && !io.signal.aborted && exitCodeFor(summaries.map((s) => s.outcome)) === 0;
  const outcome = allSucceeded ? "succeeded" : "not_all_succeeded";
  return { outcome, ...(error ? { error } : {}), mirrors: summaries };
}

function drawProgress(io: CommandIo, p: Progress): void {
  io.stdout.write(
    `\r\x1b[K${p.mirror}: ${p.finished}/${p.runs} runs finished, ${p.ingested} ingested, ${p.resources} resources read`,
  );
}

/** `rows` are exported rows read (a key seen by k users is k rows); new / changed / unchanged are keys. */
export function formatTable(summaries: readonly MirrorSummary[]): string {
  const header = [
    "mirror",
    "mode",
    "outcome",
    "runs",
    "rows",
    "new",
    "changed",
    "unchanged",
    "deleted",
    "revoked",
    "held",
    "skipped",
  ];
  const rows = summaries.map((s) => [
    s.mirror,
    s.mode,
    s.outcome,
    String(Object.values(s.runs).reduce((a, b) => a + b, 0)),
    String(s.counts.upserted + s.counts.unchanged + s.counts.rejected),
    String(s.keys.new),
    String(s.keys.changed),
    String(s.keys.unchanged),
    String(s.counts.deleted),
    String(s.counts.access_revoked),
    String(s.counts.held_revocations),
    String(s.skipped_total ?? "?"),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    `${cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()}\n`;
  let out = line(header);
  for (const [i, row] of rows.entries()) {
    out += line(row);
    const s = summaries[i] as MirrorSummary;
    if (s.finished_first)
      out += `  first finished the ${s.finished_first.mode} pass left in flight: ${s.finished_first.outcome}: ${s.finished_first.message}\n`;
    out += `  ${s.message}\n`;
    if (s.dry_run) out += formatDryRun(s.dry_run);
  }
  return out;
}

/** How many of each list the table prints; `--json` has up to DRY_RUN_LIST_LIMIT. */
const DRY_RUN_SHOWN = 20;

/** Below a dry run's summary line: the sweeps the guard would hold, then the keys and access rows. */
function formatDryRun(d: DryRunReport): string {
  let out = "";
  for (const h of d.held_sweeps)
    out += `  the mass-delete guard would hold the sweep of ${h.user_email} on ${h.server_instance_id} (${h.would_revoke} of the pair's ${h.pair_keys} access rows): a real sync --full holds it, then ${APPLY_HELD_SWEEP} applies it\n`;
  const list = (title: string, lines: string[], total: number) => {
    if (total === 0) return "";
    const shown = lines.slice(0, DRY_RUN_SHOWN);
    const more = total - shown.length;
    return `  ${title} (${total}):\n${shown.map((l) => `    ${l}\n`).join("")}${
      more > 0
        ? `    ... and ${more} more (sync --full --dry-run --json lists up to ${DRY_RUN_LIST_LIMIT})\n`
        : ""
    }`;
  };
  out += list("keys to delete", d.delete, d.would_delete);
  out += list(
    "access to revoke (user, key)",
    d.revoke.map((r) => `${r.user_email}  ${r.key}`),
    d.would_revoke,
  );
  return out;
}
