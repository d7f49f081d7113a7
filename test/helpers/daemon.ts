/**
 * The CLI as a child process (`spawnCli`, optionally under a shell prelude such as `umask 000` or
 * `ulimit -f N`), and `syncmirror run` in particular (`startDaemon`): learn its HTTP port from its
 * JSON log line, poll its endpoints until a condition holds (`until`), read `/metrics`, stop it
 * with a signal and collect what it wrote. The one way the suites start the CLI.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Harness } from "./mirror-harness.js";

const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");
const POLL_MS = 25;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DaemonProcess extends CliProcess {
  port: number;
  /** stderr lines parsed as JSON; throws naming the first line that is not JSON. */
  logs(): Record<string, unknown>[];
  get(path: string): Promise<{ status: number; body: string }>;
  /** The value of one series of /metrics (sum over series matching `labels`), 0 when absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

/** Resolves with the first truthy value of `condition` (0 and "" are not); polls, never sleeps a fixed time. */
export async function until<T>(
  condition: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
): Promise<NonNullable<Exclude<T, false>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<Exclude<T, false>>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once the process exited and its stdout and stderr are read to the end. */
  exited: Promise<Exit>;
  /** Sends `signal` (unless it has exited) and resolves with the exit and how long it took. */
  stop(signal?: NodeJS.Signals): Promise<Exit & { ms: number }>;
}

export interface SpawnOptions {
  /** A shell command run first under `sh -c` (process limits, file-creation masks). */
  prelude?: string;
  /** A command that runs node as its child (e.g. `unshare ... --fork`): `nodePid` finds node. */
  wrap?: readonly string[];
  /** Working directory (default: this process's), for configs with relative paths. */
  cwd?: string;
}

/**
 * `node dist/cli.js <args>` with its output collected; with `prelude`, under `sh -c` after that
 * command (process limits and file-creation masks the harness cannot set otherwise); with `wrap`,
 * as the child of that command; in `cwd` (default: this process's) for configs with relative paths.
 */
export function spawnCli(
  args: string[],
  env: Record<string, string | undefined>,
  options: SpawnOptions = {},
): CliProcess {
  const stdio: ["ignore", "pipe", "pipe"] = ["ignore", "pipe", "pipe"];
  const [wrapper, ...wrapArgs] = options.wrap ?? [];
  const child = options.prelude
    ? spawn("sh", ["-c", `${options.prelude} && exec "$0" "$@"`, process.execPath, CLI, ...args], {
        env,
        stdio,
        cwd: options.cwd,
      })
    : wrapper
      ? spawn(wrapper, [...wrapArgs, process.execPath, CLI, ...args], { env, stdio, cwd: options.cwd })
      : spawn(process.execPath, [CLI, ...args], { env, stdio, cwd: options.cwd });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  let exit: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    child.on("close", (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
  });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop(signal = "SIGTERM") {
      const startedAt = Date.now();
      if (!exit) child.kill(signal);
      const result = await exited;
      return { ...result, ms: Date.now() - startedAt };
    },
  };
}

/**
 * Spawns `syncmirror run --config <h.configPath>` (or `options.configPath`: a replica configured
 * unlike the others) and resolves once its HTTP port is known.
 */
export async function startDaemon(
  h: Harness,
  extraEnv: Record<string, string> = {},
  options: Pick<SpawnOptions, "wrap"> & { configPath?: string } = {},
): Promise<DaemonProcess> {
  const cli = spawnCli(
    ["run", "--config", options.configPath ?? h.configPath],
    { ...h.env, LOG_LEVEL: "info", ...extraEnv },
    options,
  );
  let exit: Exit | undefined;
  void cli.exited.then((e) => {
    exit = e;
  });
  const port = await until(() => {
    if (exit) throw new Error(`daemon exited (${JSON.stringify(exit)}) before listening:\n${cli.stderr()}`);
    return listeningPort(cli.stderr());
  }, "the daemon's http listening log line");
  const get = (path: string) => httpGet(port, path);
  return {
    ...cli,
    port,
    logs: () => parseLogLines(cli.stderr()),
    get,
    async metric(name, labels = {}) {
      return sumSeries((await get("/metrics")).body, name, labels);
    },
  };
}

export interface DaemonReply {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, shapes are asserted
  json: any;
}

/** One request to a daemon's HTTP server (on `host`, default 127.0.0.1), its answer read whole. */
export async function callDaemon(
  d: Pick<DaemonProcess, "port">,
  path: string,
  init: { authorization?: string | undefined; method?: string; host?: string; body?: string } = {},
): Promise<DaemonReply> {
  const headers: Record<string, string> = init.authorization ? { authorization: init.authorization } : {};
  const res = await fetch(`http://${init.host ?? "127.0.0.1"}:${d.port}${path}`, {
    method: init.method ?? "GET",
    headers,
    body: init.body,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** GET on a daemon's HTTP server. */
export async function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

/** The port a `run` started through `spawnCli` logged it listens on (`http.listen: 127.0.0.1:0`). */
export function waitForPort(p: CliProcess): Promise<number> {
  return until(() => listeningPort(p.stderr()), "the daemon's http listening log line", 30_000);
}

function listeningPort(stderr: string): number | undefined {
  for (const line of stderr.split("\n")) {
    if (!line.startsWith("{") || !line.endsWith("}")) continue; // a line still being written
    const entry = JSON.parse(line) as { msg?: string; port?: number };
    if (entry.msg?.startsWith("http listening") && typeof entry.port === "number") return entry.port;
  }
  return undefined;
}

export function parseLogLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`stderr line is not JSON: ${line}`);
      }
    });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return samples;
}

/** One scrape's text read: its samples, `# TYPE` lines, and sums (`value`) or presence (`has`) of series matching labels. */
export function readScrape(text: string) {
  const samples = parseMetrics(text);
  const types = Object.fromEntries(
    [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]),
  );
  const matching = (name: string, labels: Record<string, string>) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    text,
    samples,
    types,
    value: (name: string, labels: Record<string, string> = {}) =>
      matching(name, labels).reduce((sum, s) => sum + s.value, 0),
    has: (name: string, labels: Record<string, string> = {}) => matching(name, labels).length > 0,
  };
}

export function sumSeries(text: string, name: string, labels: Record<string, string> = {}): number {
  return parseMetrics(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** A loopback port nothing listens on now: connecting is refused at once; binding it works. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
