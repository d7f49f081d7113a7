/**
 * `syncmirror sync`: one pass now for the named mirrors (default all). Exit 0 when every mirror
 * succeeded, 1 when any failed or was partial, 2 for bad usage or config.
 */
import type { Config, MirrorConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { createRuntime } from "../runtime.js";
import type { Progress } from "../sync/context.js";
import { exitCodeFor } from "../sync/outcome.js";
import type { MirrorSummary } from "../sync/summary.js";
import { syncMirror } from "../sync/sync-mirror.js";
import type { Command, CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const sync: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs(args, {
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
    const runtime = createRuntime(config, io, { lock: true });
    const onStop = () =>
      runtime.log.warn(
        { reason: io.signal.reason instanceof Error ? io.signal.reason.message : "stop requested" },
        "stopping: the current page commits; run sync again to resume",
      );
    io.signal.addEventListener("abort", onStop, { once: true });
    try {
      const summaries: MirrorSummary[] = [];
      for (const mirror of mirrors) {
        if (io.signal.aborted) break;
        const ctx = runtime.syncContext(io.signal);
        if (io.isTty && !values.json) ctx.onProgress = (p) => drawProgress(io, p);
        summaries.push(
          await syncMirror(mirror, ctx, {
            full: values.full ?? false,
            allowMassDelete: values["allow-mass-delete"] ?? false,
            dryRun: values["dry-run"] ?? false,
          }),
        );
      }
      if (io.isTty && !values.json) io.stdout.write("\r\x1b[K");
      const code = exitCodeFor(summaries.map((s) => s.outcome));
      print(io, summaries, values.json ?? false, code);
      return code;
    } finally {
      io.signal.removeEventListener("abort", onStop);
      await runtime.close();
    }
  });

function drawProgress(io: CommandIo, p: Progress): void {
  io.stdout.write(
    `\r\x1b[K${p.mirror}: ${p.finished}/${p.runs} runs finished, ${p.ingested} ingested, ${p.resources} resources read`,
  );
}

function selectMirrors(config: Config, names: string[]): MirrorConfig[] {
  if (names.length === 0) return [...config.mirrors];
  return names.map((name) => {
    const mirror = config.mirrors.find((m) => m.name === name);
    if (!mirror) {
      throw new UsageError(
        `no mirror named "${name}" in ${config.file} (known: ${config.mirrors.map((m) => m.name).join(", ")})`,
      );
    }
    return mirror;
  });
}

function print(io: CommandIo, summaries: MirrorSummary[], json: boolean, code: number): void {
  if (json) {
    io.stdout.write(
      `${JSON.stringify({ outcome: code === 0 ? "succeeded" : "not_all_succeeded", mirrors: summaries }, null, 2)}\n`,
    );
    return;
  }
  io.stdout.write(formatTable(summaries));
}

export function formatTable(summaries: readonly MirrorSummary[]): string {
  const header = [
    "mirror",
    "mode",
    "outcome",
    "runs",
    "upserted",
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
    String(s.counts.upserted),
    String(s.counts.unchanged),
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
    out += `  ${s.message}\n`;
    if (s.dry_run)
      out += `  dry run: would revoke ${s.dry_run.would_revoke}, would delete ${s.dry_run.would_delete}\n`;
  }
  return out;
}
