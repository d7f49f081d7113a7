/**
 * The console's JSON as text for a person at a terminal (`history`, `problems` without `--json`).
 */

import { printableLines } from "../terminal-text.js";
import type { HistoryJson, PassJson, PendingApprovalJson } from "./history.js";
import type { ProblemJson, ProblemsJson } from "./problems.js";

export function formatHistory(h: HistoryJson, nextCommand: (before: number) => string): string {
  const lines = h.pending_sweep_approvals.map(describeApproval);
  if (h.passes.length === 0) lines.push("no passes recorded");
  for (const p of h.passes) lines.push(...formatPass(p));
  if (h.next_before !== null) lines.push(`older passes: ${nextCommand(h.next_before)}`);
  return printableLines(lines);
}

/** Who settled a pass taken over from the replica that started it. */
function finishedElsewhere(p: PassJson): string {
  const by = p.finished_by;
  return by && by.instance_id !== p.replica?.instance_id ? `, finished on ${by.name}` : "";
}

function formatPass(p: PassJson): string[] {
  const outcome = p.state === "in_flight" ? "in flight" : (p.outcome ?? "unknown");
  const ended =
    p.ended_at === null
      ? "not ended"
      : `ended ${p.ended_at}${p.duration_seconds === null ? "" : `, ${p.duration_seconds.toFixed(1)} s`}`;
  const lines = [
    `#${p.id} ${p.mirror} ${p.mode}${p.dry_run ? " (dry run)" : ""}: ${outcome} (started ${p.started_at}, ${ended})`,
    `  trigger ${p.trigger_id ?? "not started"}${p.since ? `, since ${p.since}` : ""}${p.replica?.name ? `, on ${p.replica.name}` : ""}${finishedElsewhere(p)}`,
  ];
  if (p.message) lines.push(`  ${p.message}`);
  const k = p.keys;
  const c = p.counts;
  lines.push(
    `  keys: ${k.new} new, ${k.changed} changed, ${k.unchanged ?? "?"} unchanged; rows: ${c.upserted} upserted, ${c.unchanged} unchanged, ${c.rejected} rejected; ${c.deleted} deleted, ${c.revoked} revoked, ${c.held} held`,
  );
  const tallies = [tally("runs", p.runs), tally("sources", p.sources), tally("skipped", p.skipped)];
  lines.push(`  ${tallies.filter((t) => t !== "").join("; ") || "no runs"}`);
  const a = p.sweep_approval;
  if (a)
    lines.push(
      `  sweep approved by ${a.by} at ${a.at}: ${a.pairs} pair(s), up to ${a.up_to}; ${a.used} revoked on it`,
    );
  for (const e of p.errors) {
    const where = [e.sync_id, e.user_email, e.source].filter((x) => x !== null).join(" ");
    lines.push(
      `  error ${e.at}${where ? ` [${where}]` : ""}${e.replica ? ` on ${e.replica}` : ""}: ${e.error}`,
    );
  }
  return lines;
}

function tally(name: string, counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? "" : `${name}: ${entries.map(([k, n]) => `${n} ${k}`).join(", ")}`;
}

export function formatProblems(p: ProblemsJson): string {
  const lines = p.pending_sweep_approvals.map(describeApproval);
  if (p.problems.length === 0) lines.push("no open problems");
  for (const x of p.problems) lines.push(formatProblem(x));
  if (p.truncated) lines.push("(more problems are open than listed: raise --limit)");
  return printableLines(lines);
}

function formatProblem(p: ProblemJson): string {
  const concerns = [
    p.user_email,
    p.server_instance_id && `server ${p.server_instance_id}`,
    p.source && `source ${p.source}`,
    p.key && `key ${p.key}`,
    p.sync_id && `run ${p.sync_id}`,
  ]
    .filter((x) => x)
    .join(", ");
  const seen =
    p.first_seen_at === p.last_seen_at
      ? `seen ${p.last_seen_at}`
      : `seen ${p.first_seen_at} .. ${p.last_seen_at}`;
  return `${p.mirror} ${p.kind}${concerns ? ` (${concerns})` : ""}: ${p.reason} [${seen}]`;
}

function describeApproval(a: PendingApprovalJson): string {
  return `${a.mirror}: sweep approved by ${a.by} at ${a.at} (${a.pairs} pair(s), up to ${a.up_to} revocations): the next full pass applies it`;
}
