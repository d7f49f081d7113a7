/** Facts about the machine and the build a benchmark ran on. */
import { spawnSync } from "node:child_process";
import { cpus, loadavg, release, totalmem, type } from "node:os";
import Database from "better-sqlite3";
import { rssMethod } from "./measure.js";
import type { MachineFacts } from "./report.js";
import { round } from "./workloads.js";

export function machineFacts(loadStart: number[], root: string): MachineFacts {
  const db = new Database(":memory:");
  const sqlite = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
  db.close();
  const git = (...args: string[]) =>
    spawnSync("git", args, { cwd: root, encoding: "utf8" }).stdout?.trim() ?? "";
  const commit = git("rev-parse", "--short", "HEAD") || "unknown";
  const dirty = git("status", "--porcelain", "--untracked-files=no") !== "";
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    os: `${type()} ${release()}`,
    node: process.version,
    sqlite,
    loadStart,
    loadEnd: loadavg(),
    rssMethod:
      rssMethod() === "gnu-time"
        ? "GNU time (maxrss of the node process)"
        : "/proc/<pid>/status VmHWM, sampled",
    commit: `${commit}${dirty ? " with uncommitted changes" : ""}`,
  };
}
