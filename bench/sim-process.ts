/**
 * The simulated upstream in its own process (`syncmirror simulate`), so the measured mirror's peak
 * RSS is its own. Driven through its printed base URL and token, and its `/_sim` admin routes
 * (src/simulator/admin.ts) for edits and the request log.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { RequestLogEntry } from "../src/simulator/server.js";
import { readCpuSeconds } from "./measure.js";

/** One request as the simulator logged it. */
export type LoggedRequest = RequestLogEntry;

export interface SimProcess {
  baseUrl: string;
  token: string;
  syncConfigId: string;
  /** Milliseconds the simulator needed to seed its workspace. */
  readyMs: number;
  /** The simulator's CPU seconds (user + system) so far. */
  cpuSeconds(): number;
  editRandom(fraction: number, seed: number): Promise<{ edited: number; live: number }>;
  removeRandom(fraction: number, seed: number): Promise<{ removed: number; live: number }>;
  requests(): Promise<LoggedRequest[]>;
  clearRequests(): Promise<void>;
  stop(): Promise<void>;
}

export interface SimArgs {
  cli: string;
  seed: number;
  users: number;
  docs: number;
  servers: string;
  /** Server-side delay of every API request (`simulate --latency-ms`). */
  latencyMs?: number;
}

export async function startSimProcess(args: SimArgs): Promise<SimProcess> {
  const child = spawn(
    process.execPath,
    [
      args.cli,
      "simulate",
      "--port",
      "0",
      "--seed",
      String(args.seed),
      "--users",
      String(args.users),
      "--docs",
      String(args.docs),
      "--servers",
      args.servers,
      "--latency-ms",
      String(args.latencyMs ?? 0),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const banner = await readBanner(child);
  const field = (name: string) => {
    const value = new RegExp(`^${name}: (\\S+)`, "m").exec(banner)?.[1];
    if (!value) throw new Error(`simulate did not print ${name}:\n${banner}`);
    return value;
  };
  const baseUrl = field("base_url");
  const token = field("token");
  const admin = `${new URL(baseUrl).origin}/_sim`;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${admin}${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} /_sim${path}: ${response.status} ${await response.text()}`);
    return (response.status === 204 ? undefined : await response.json()) as T;
  };
  const pid = child.pid ?? -1;
  return {
    baseUrl,
    token,
    syncConfigId: field("sync_config_id"),
    readyMs: Number(/ready in (\d+) ms/.exec(banner)?.[1] ?? 0),
    cpuSeconds() {
      const cpu = readCpuSeconds(pid);
      return cpu.user + cpu.system;
    },
    editRandom: (fraction, seed) => call("POST", "/docs/edit-random", { fraction, seed }),
    removeRandom: (fraction, seed) => call("POST", "/docs/remove-random", { fraction, seed }),
    requests: async () => (await call<{ entries: LoggedRequest[] }>("GET", "/requests")).entries,
    clearRequests: () => call("DELETE", "/requests"),
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function readBanner(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("try: curl")) resolve(out);
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`simulate exited with ${code}: ${err || out}`)));
  });
}

/** Runs `fn` against a simulator process started for it, and stops that process after. */
export async function withSimProcess(
  args: SimArgs,
  log: (line: string) => void,
  fn: (sim: SimProcess) => Promise<void>,
): Promise<void> {
  const sim = await startSimProcess(args);
  log(
    `simulator: ${args.docs} docs, ${args.users} users, servers ${args.servers}` +
      `${args.latencyMs ? `, latency ${args.latencyMs} ms` : ""} (ready in ${sim.readyMs} ms)`,
  );
  try {
    await fn(sim);
  } finally {
    await sim.stop();
  }
}
