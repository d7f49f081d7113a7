/**
 * Contention and storage failures: two processes on one database, a read-only database file, a
 * file that cannot grow (disk full). Each ends in a clear error or a clean refusal, never in a
 * corrupt or half-written mirror.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  consistencyProblems,
  integrityOf,
  snapshotDb,
  snapshotDiff,
} from "../../helpers/db-snapshot.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { createTwins, type Twins, triggerPosts } from "../../helpers/twins.js";

const CLI = join(import.meta.dirname, "..", "..", "..", "dist", "cli.js");

let twins: Twins | undefined;
let cleanup: (() => void) | undefined;
afterEach(async () => {
  cleanup?.();
  cleanup = undefined;
  await twins?.close();
  twins = undefined;
});

describe("two processes on one database", () => {
  it("refuses the second writer with a clear message while the first finishes untouched", async () => {
    twins = await createTwins({ sim: { docs: 40 } });
    const { clean, hurt } = twins;
    await clean.sync();
    hurt.sim.runs.hold();
    const first = hurt.cli(["sync"]);
    // The first process holds the lock before it triggers: wait for its trigger to arrive.
    await vi.waitFor(() => expect(triggerPosts(hurt)).toBe(1), { timeout: 30_000, interval: 20 });

    const second = await hurt.cli(["sync"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/database .*mirror\.db is in use by another syncmirror process/);
    expect(second.stderr).toMatch(/stop it first, or point this one at another database\.path/);
    expect(triggerPosts(hurt)).toBe(1);

    hurt.sim.runs.release();
    expect((await first).code).toBe(0);
    expect(integrityOf(hurt.dbPath)).toBe("ok");
    expect(snapshotDiff(snapshotDb(hurt.dbPath), snapshotDb(clean.dbPath))).toEqual([]);
  });
});

/**
 * Root ignores file modes, so as root the file is made immutable instead (chattr +i, which even
 * root cannot write); elsewhere it is chmod 0400.
 */
function makeReadOnly(path: string): () => void {
  if (process.getuid?.() === 0) {
    run("chattr", ["+i", path]);
    return () => run("chattr", ["-i", path]);
  }
  chmodSync(path, 0o400);
  return () => chmodSync(path, 0o600);
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
}

describe("storage failures", () => {
  it("a read-only database file: exit 1 naming the file and what to do, nothing changed, nothing triggered", async () => {
    twins = await createTwins({ sim: { docs: 30 } });
    const { hurt } = twins;
    expect((await hurt.sync()).outcome).toBe("succeeded");
    const before = snapshotDb(hurt.dbPath);
    const posts = triggerPosts(hurt);
    cleanup = makeReadOnly(hurt.dbPath);

    const r = await hurt.cli(["sync", "--full"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(hurt.dbPath);
    expect(r.stderr).toMatch(/writable|read-only/);
    expect(triggerPosts(hurt)).toBe(posts);
    cleanup();
    cleanup = undefined;
    expect(snapshotDiff(snapshotDb(hurt.dbPath), before)).toEqual([]);
  });

  it("a disk that fills mid-pass: exit 1 naming the disk, whole pages only, and the next pass resumes to a clean run's state", async () => {
    twins = await createTwins({ sim: { docs: 400 } });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");
    // Create the database (migrations) first, then let its files grow by 70% of what the pass
    // needs (measured on the clean twin): the first export pages fit, the rest do not.
    expect((await hurt.cli(["status"])).code).toBe(0);
    const emptyBytes = statSync(hurt.dbPath).size;
    const limitBytes = emptyBytes + (statSync(clean.dbPath).size - emptyBytes) * 0.7;

    const full = await cliWithFileSizeLimit(hurt, ["sync"], limitBytes);
    expect(full.code, full.stderr).toBe(1);
    expect(full.stderr).toMatch(/the database could not be written .*disk is not full.*resumes/);
    expect(integrityOf(hurt.dbPath)).toBe("ok");
    expect(consistencyProblems(hurt.dbPath)).toEqual([]);
    // Some pages committed before the disk filled, not all; the trigger stays in flight.
    const runs = hurt.query<{ ingest: string }>("SELECT ingest FROM runs");
    expect(runs.filter((r) => r.ingest === "done").length).toBeGreaterThan(0);
    expect(runs.filter((r) => r.ingest !== "done").length).toBeGreaterThan(0);

    const resumed = await hurt.cli(["sync"]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(triggerPosts(hurt)).toBe(1);
    expect(snapshotDiff(snapshotDb(hurt.dbPath), snapshotDb(clean.dbPath))).toEqual([]);
  });
});

/**
 * The real CLI under RLIMIT_FSIZE (`ulimit -f`): a write past the limit fails like a full disk
 * (Node ignores SIGXFSZ, so the write returns EFBIG to SQLite). No seam in the product.
 */
function cliWithFileSizeLimit(
  h: Harness,
  args: string[],
  limitBytes: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const blocks = Math.ceil(limitBytes / 512);
  return new Promise((resolve, reject) => {
    const child = spawn(
      "sh",
      ["-c", `ulimit -f ${blocks} && exec "$0" "$@"`, process.execPath, CLI, ...args, "--config", h.configPath],
      { env: h.env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
