/**
 * The real CLI as a child process under a shell prelude (`umask 000`, `ulimit -f N`), for what the
 * harness's `cli()` cannot set up: process limits, file-creation masks, a long-running daemon.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { vi } from "vitest";

const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

export interface Spawned {
  child: ChildProcess;
  out: { stdout: string; stderr: string };
  /** The exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

export function spawnCli(
  args: string[],
  o: { configPath: string; env: Record<string, string | undefined>; prelude?: string },
): Spawned {
  const child = spawn(
    "sh",
    [
      "-c",
      `${o.prelude ?? "true"} && exec "$0" "$@"`,
      process.execPath,
      CLI,
      ...args,
      "--config",
      o.configPath,
    ],
    { env: o.env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] },
  );
  const out = { stdout: "", stderr: "" };
  child.stdout?.on("data", (d: Buffer) => {
    out.stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out.stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, out, exited };
}

/** The port a daemon logged it listens on (`http.listen: 127.0.0.1:0`). */
export function listeningPort(s: Spawned): Promise<number> {
  return vi.waitFor(
    () => {
      const m = /"port":(\d+)[^\n]*http listening/.exec(s.out.stderr);
      if (!m) throw new Error(`not listening yet: ${s.out.stderr.slice(-500)}`);
      return Number(m[1]);
    },
    { timeout: 30_000, interval: 20 },
  );
}

/** GET on the daemon's HTTP server. */
export async function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: await r.text() };
}
