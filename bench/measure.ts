/**
 * Runs one measured child process (`node ...`) and reports its wall time, CPU time and peak RSS.
 * Peak RSS comes from GNU `/usr/bin/time` when it is installed (the kernel's maxrss of the node
 * process), else from sampling `/proc/<pid>/status` VmHWM every 20 ms until the process exits.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

export interface Measured {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  userSeconds: number;
  systemSeconds: number;
  peakRssKb: number;
}

export type RssMethod = "gnu-time" | "proc-vmhwm";

const TIME = "/usr/bin/time";
let method: RssMethod | undefined;

/** How peak RSS is measured on this machine. */
export function rssMethod(): RssMethod {
  if (method === undefined) {
    const probe = existsSync(TIME) ? spawnSync(TIME, ["-f", "%M", "true"], { encoding: "utf8" }) : undefined;
    method = probe?.status === 0 && /^\d+\s*$/.test(probe.stderr) ? "gnu-time" : "proc-vmhwm";
  }
  return method;
}

export interface MeasureOptions {
  env: NodeJS.ProcessEnv;
  /** Scratch directory for the timing file. */
  dir: string;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeFlags?: string[];
}

/** Runs `node <args>` and measures it; never throws for a non-zero exit. */
export async function runMeasured(args: string[], options: MeasureOptions): Promise<Measured> {
  const nodeArgs = [...(options.nodeFlags ?? []), ...args];
  const timeFile = join(options.dir, `time-${process.hrtime.bigint()}.txt`);
  const gnu = rssMethod() === "gnu-time";
  const started = performance.now();
  const child = gnu
    ? spawn(TIME, ["-o", timeFile, "-f", "%e %U %S %M", process.execPath, ...nodeArgs], {
        env: options.env,
        stdio: ["ignore", "pipe", "pipe"],
      })
    : spawn(process.execPath, nodeArgs, { env: options.env, stdio: ["ignore", "pipe", "pipe"] });
  const sampler = gnu ? undefined : sampleProc(child.pid ?? -1);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (c) => resolve(c));
  });
  const wallMs = performance.now() - started;
  if (sampler) {
    const s = sampler.stop();
    return { code, stdout, stderr, wallMs, ...s };
  }
  const [, user, system, rss] = readFileSync(timeFile, "utf8").trim().split(/\s+/).map(Number);
  rmSync(timeFile, { force: true });
  return {
    code,
    stdout,
    stderr,
    wallMs,
    userSeconds: user ?? 0,
    systemSeconds: system ?? 0,
    peakRssKb: rss ?? 0,
  };
}

/** Samples VmHWM and CPU ticks of a running process; the last sample before exit wins. */
function sampleProc(pid: number) {
  let peakRssKb = 0;
  let userSeconds = 0;
  let systemSeconds = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const hwm = /VmHWM:\s+(\d+)/.exec(status);
      if (hwm) peakRssKb = Math.max(peakRssKb, Number(hwm[1]));
      const cpu = readCpuSeconds(pid);
      userSeconds = cpu.user;
      systemSeconds = cpu.system;
    } catch {
      // The process is gone: keep the last sample.
    }
  };
  read();
  const timer = setInterval(read, 20);
  return {
    stop() {
      clearInterval(timer);
      return { peakRssKb, userSeconds, systemSeconds };
    },
  };
}

/** utime and stime of a process, in seconds (clock ticks of 1/100 s on Linux). */
export function readCpuSeconds(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces; fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}
