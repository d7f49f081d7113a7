/**
 * What `plan` and `apply` print: a diff a person reads (`~` a field replaced, `+` / `-` what is
 * added or removed), or the JSON `plan --json` prints for scripts.
 */
import { printableLines } from "../terminal-text.js";
import type { ApplyResult } from "./apply.js";
import type { FieldChange } from "./diff.js";
import { adoptProblem, isPending, type PlanEntry } from "./plan.js";

/** Instructions shorter than this on one line are shown inline, longer ones line by line. */
const INLINE_CHARS = 60;

export function formatPlan(entries: readonly PlanEntry[]): string {
  const lines: string[] = [];
  for (const e of entries) {
    lines.push(`mirror ${e.mirror}: ${headline(e)}`);
    for (const change of e.changes) lines.push(...formatChange(change, e.action === "create"));
    if (e.problem) lines.push(`  PROBLEM ${e.problem}`);
    for (const note of e.notes) lines.push(`  note: ${note}`);
  }
  const count = (action: PlanEntry["action"]) => entries.filter((e) => e.action === action).length;
  const problems = entries.filter((e) => e.problem !== null || e.needs === "adopt").length;
  lines.push(
    "",
    `Plan: ${count("create")} to create, ${count("replace")} to replace, ${count("adopt")} to adopt, ${count("none")} unchanged, ${count("unmanaged")} unmanaged; ${problems} problem(s).`,
  );
  return printableLines(lines);
}

/** `plan --json`: `pending` says whether `apply` would change something upstream. */
export function planJson(entries: readonly PlanEntry[]) {
  return {
    pending: entries.some(isPending),
    problems: entries.filter((e) => e.problem !== null || e.needs === "adopt").length,
    mirrors: entries.map((e) => ({
      mirror: e.mirror,
      action: e.action,
      name: e.name,
      sync_config_id: e.syncConfigId,
      changes: e.changes,
      needs: e.needs,
      // The same count as `problems`: a config to adopt is one until `apply --adopt`.
      problem: e.problem ?? (e.needs === "adopt" ? adoptProblem(e) : null),
      notes: e.notes,
    })),
  };
}

/**
 * `plan --json` when no plan could be made (the API or the database unreachable): `pending` and
 * `problems` are null, not false and 0, so a script that reads only them cannot take it for a
 * clean plan; `error` says why, as in `sync --json`.
 */
export function planFailedJson(error: { code: string; message: string }) {
  return { pending: null, problems: null, error, mirrors: [] };
}

export function formatApply(results: readonly ApplyResult[]): string {
  const lines = results.map(
    (r) => `mirror ${r.mirror}: ${r.done === "refused" ? `REFUSED ${r.message}` : r.message}`,
  );
  const count = (done: ApplyResult["done"]) => results.filter((r) => r.done === done).length;
  lines.push(
    "",
    `Apply: ${count("created")} created, ${count("replaced")} replaced, ${count("adopted")} adopted, ${count("deleted")} deleted, ${count("released")} released; ${count("refused")} refused.`,
  );
  return printableLines(lines);
}

function headline(e: PlanEntry): string {
  // A record whose apply was refused holds no name: it is the mirror's record, not a config's.
  const named = e.name === null ? "record (never applied)" : `"${e.name}"`;
  const what = `sync config ${named}${e.syncConfigId ? ` (${e.syncConfigId})` : ""}`;
  switch (e.action) {
    case "create":
      return `create ${what} in project "${e.desired?.projectName}"`;
    case "replace":
      return `replace ${what}`;
    case "adopt":
      return `adopt ${what}: it exists and syncmirror did not create it; \`apply --adopt\` takes it over`;
    case "none":
      return `${what} is up to date`;
    case "unmanaged":
      return `unmanaged ${what}`;
    case "forget":
      return `forget ${what}: syncmirror stops tracking it; nothing changes upstream`;
    case "not_declared":
      return `names sync config ${e.syncConfigId} (not declared in the file: nothing to plan)`;
  }
}

function formatChange(c: FieldChange, creating: boolean): string[] {
  const mark = creating ? "+" : "~";
  if ("add" in c) {
    const parts = creating ? c.add : [...c.add.map((a) => `+ ${a}`), ...c.remove.map((r) => `- ${r}`)];
    return [`  ${mark} ${c.field}: ${parts.join(", ")}`];
  }
  if (typeof c.from === "boolean")
    return [creating ? `  + all_users: ${c.to}` : `  ~ all_users: ${c.from} -> ${c.to}`];
  if (creating) return [`  + ${c.field}: ${JSON.stringify(c.to)}`];
  const inline = [c.from, c.to].every((v) => v.length <= INLINE_CHARS && !v.includes("\n"));
  if (inline) return [`  ~ ${c.field}: ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)}`];
  return [
    `  ~ ${c.field}:`,
    ...c.from.split("\n").map((l) => `      - ${l}`),
    ...c.to.split("\n").map((l) => `      + ${l}`),
  ];
}
