/**
 * `syncmirror status [--json]`: per-mirror state from the database. Needs no token and takes no
 * lock, so it works beside a running daemon.
 */
import {
  buildStatus,
  type MirrorStatus,
  type ReplicaStatus,
  type RetiredMirrorStatus,
  retiredGrants,
} from "../sync/status-report.js";
import { printableLines } from "../terminal-text.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, printFromStore, withErrors } from "./common.js";

export const status: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("status", args, { json: { type: "boolean", default: false } });
    const config = loadCommandConfig(values.config, io);
    await printFromStore(
      io,
      config,
      values.json ?? false,
      (store) => buildStatus(store, config.mirrors),
      (report) =>
        `${report.mirrors.map(formatMirror).join("\n")}\n${formatRetired(report.retired_mirrors)}${formatReplicas(report.replicas)}`,
      (notice) => io.stderr.write(`${notice}\n`),
    );
    return 0;
  });

function formatMirror(s: MirrorStatus): string {
  const lines = [
    `${s.mirror} (sync config ${s.sync_config_id ?? "not applied yet"}${s.declared_sync_config ? `, declared as "${s.declared_sync_config.name}"` : ""})`,
    `  last incremental success: ${s.last_incremental_success_at ?? "never"}`,
    `  last full success:        ${s.last_full_success_at ?? "never"}`,
    `  last outcome:             ${s.last_outcome ?? "none"}${s.last_message ? ` (${s.last_message})` : ""}`,
    `  next trigger:             ${s.next_mode}${s.next_since ? ` since ${s.next_since}` : " (no since)"}`,
    `  live resources:           ${s.live_resources}`,
    `  pairs:                    ${s.pairs} (${s.pairs_awaiting_baseline} awaiting a baseline)`,
    `  held revocations:         ${s.held_revocations}`,
  ];
  if (s.declared_sync_config?.last_error)
    lines.push(`  sync config not applied:  ${s.declared_sync_config.last_error}`);
  lines.push(`  held by:                  ${heldBy(s)}`);
  lines.push(...scheduleLines(s));
  if (s.in_flight) lines.push(`  in flight:                ${describeInFlight(s.in_flight, s.holder)}`);
  for (const p of s.skipped_pairs)
    lines.push(`  skipped: ${p.user_email} on ${p.server_instance_id}: ${p.reason}`);
  // Skip reasons, the last message and a declared config's error may quote the service.
  return printableLines(lines);
}

/**
 * A trigger without an id was recorded but never answered (a rejected token, an unreachable
 * service, a lost response): say so, and that the next pass adopts the runs it may have created
 * before it sends one (docs/reference/sync-semantics.md#one-trigger-per-mirror).
 */
function describeInFlight(t: NonNullable<MirrorStatus["in_flight"]>, holder: string | null): string {
  const next = holder === null ? "the next pass" : `the pass running on ${holder}`;
  if (t.state === "intent")
    return `${t.mode} trigger not started: the service has not accepted its POST (see last outcome); ${next} adopts any runs that POST created, else sends it`;
  const done = t.runs.filter((r) => r.ingest === "done").length;
  return `${t.mode} trigger ${t.trigger_id}, ${done}/${t.runs.length} runs ingested; ${next} resumes it`;
}

/** The lease holder, or why there is none: an in-flight trigger without one waits for a replica to resume it. */
function heldBy(s: MirrorStatus): string {
  if (s.holder !== null) {
    return `${s.holder} (instance ${s.holder_instance_id}), lease epoch ${s.lease_epoch} until ${s.lease_expires_at}`;
  }
  return s.in_flight
    ? "nobody: the trigger in flight is resumed by the next replica (or start) that finds it"
    : "nobody (no pass running)";
}

/** Next scheduled times, the pause and the pass due (docs/console-history.md). */
function scheduleLines(s: MirrorStatus): string[] {
  const skipped = s.paused ? " (skipped: paused)" : "";
  const lines = [
    `  next incremental:         ${s.next_incremental_at ?? "none within a year"}${skipped}`,
    `  next full:                ${s.next_full_at ?? "none within a year"}${skipped}`,
  ];
  if (s.paused) lines.push(`  paused:                   since ${s.paused_since} by ${s.paused_by}`);
  if (s.due) {
    const why = s.due.reason === "requested" ? `requested by ${s.due.by}` : s.due.reason;
    lines.push(
      `  due:                      ${s.due.mode} pass since ${s.due.since} (${why}), not started yet`,
    );
  }
  return lines;
}

/** Nothing when every mirror the database knows is in the config. */
function formatRetired(retired: readonly RetiredMirrorStatus[]): string {
  if (retired.length === 0) return "";
  const rows = retired.map((r) => `  ${r.mirror}: ${retiredGrants(r)}`);
  return `retired mirrors (in the database, not in the config):\n${rows.join("\n")}\n`;
}

function formatReplicas(replicas: readonly ReplicaStatus[]): string {
  if (replicas.length === 0) return "daemons alive: none (a due pass waits for one, or for `trigger`)\n";
  const rows = replicas.map(
    (r) =>
      `  ${r.name} (instance ${r.instance_id}): ${r.running}/${r.slots} passes running, seen ${r.last_seen_at}`,
  );
  return `daemons alive:\n${rows.join("\n")}\n`;
}
