/**
 * Scale-out: several mirrors (sync configs created on the simulator over the same users and
 * servers) run by 1, then 3 `syncmirror run` replicas sharing one PostgreSQL database, each with
 * `max_concurrent_mirrors` 2. Every mirror's incremental_cron fires once, a few seconds after the
 * replicas start; the wall time runs from that tick until the `triggers` table holds a `done`
 * trigger for every mirror. The replicas are then stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readCpuSeconds } from "./measure.js";
import { DATABASE_URL_ENV, TOKEN_ENV } from "./mirror.js";
import { type BenchOptions, docsForRows } from "./options.js";
import { pgQuery, withDatabase } from "./pg-server.js";
import { type SimProcess, withSimProcess } from "./sim-process.js";
import type { BenchContext } from "./workloads.js";

export interface ReplicaRun {
  replicas: number;
  /** Cron tick to the last mirror's trigger `done`. */
  wallMs: number;
  /** Triggers written (one per mirror per scheduled time when each time runs once). */
  triggers: number;
  /** resource_access rows across every mirror. */
  rows: number;
  /** User + system seconds of all replicas together, from start to SIGTERM. */
  cpuSeconds: number;
  /** The largest replica's peak RSS. */
  peakRssKb: number;
  /** The last replica's "daemon started" log line, relative to the tick (negative: before it). */
  lastStartedMs: number;
}

export interface ReplicaResult {
  mirrors: number;
  users: number;
  docs: number;
  runs: ReplicaRun[];
}

const MAX_CONCURRENT_MIRRORS = 2;
/** Long enough for every replica to start and migrate on a loaded machine before the tick. */
const TICK_LEAD_MS = 20_000;
const DONE_TIMEOUT_MS = 600_000;

export async function replicaWorkload(
  ctx: BenchContext,
  options: BenchOptions,
  adminUrl: string,
): Promise<ReplicaResult> {
  const users = options.users;
  const docs = docsForRows(options.replicaResources, users);
  const runs: ReplicaRun[] = [];
  const sim = { cli: ctx.cli, seed: options.seed, users, docs, servers: options.servers };
  await withSimProcess(sim, ctx.log, async (sim) => {
    const configIds = await createSyncConfigs(sim, options.replicaMirrors);
    for (const replicas of [1, 3]) {
      ctx.log(`replicas: ${replicas} x syncmirror run, ${configIds.length} mirrors ...`);
      const run = await withDatabase(adminUrl, `replicas${replicas}`, (url) =>
        runReplicas(ctx, sim, configIds, replicas, url),
      );
      ctx.log(
        `replicas: ${replicas}: ${(run.wallMs / 1000).toFixed(1)} s from tick to all done, ${run.triggers} triggers, cpu ${run.cpuSeconds.toFixed(1)} s`,
      );
      runs.push(run);
    }
  });
  return { mirrors: options.replicaMirrors, users, docs, runs };
}

/** POST /sync-configs `count` times: every server, every user, as the simulator's default config. */
async function createSyncConfigs(sim: SimProcess, count: number): Promise<string[]> {
  const headers = { authorization: `Bearer ${sim.token}`, "content-type": "application/json" };
  const call = async <T>(path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${sim.baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const [project] = await call<{ id: string }[]>("/projects");
  if (!project) throw new Error("the simulator lists no project");
  const { sources } = await call<{ sources: { server_instance_id: string }[] }>(
    `/sync-configs/sources?project_id=${project.id}`,
  );
  const ids: string[] = [];
  for (let i = 1; i <= count; i++) {
    const config = await call<{ id: string }>("/sync-configs", {
      project_id: project.id,
      name: `bench replicas ${i}`,
      instructions: "Collect every page, document and issue that is useful for search.",
      server_instance_ids: sources.slice(0, 10).map((s) => s.server_instance_id),
      all_users: true,
    });
    ids.push(config.id);
  }
  return ids;
}

/** A 6-field cron expression that fires at `at`'s second (UTC), once a day. */
function cronAt(at: Date): string {
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

async function runReplicas(
  ctx: BenchContext,
  sim: SimProcess,
  configIds: string[],
  replicas: number,
  databaseUrl: string,
): Promise<ReplicaRun> {
  // Whole seconds: cron cannot fire between them.
  const tick = new Date(Math.ceil((Date.now() + TICK_LEAD_MS) / 1000) * 1000);
  const configPath = join(ctx.dir, `replicas-${replicas}.yaml`);
  const config = {
    api: { base_url: sim.baseUrl, token_env: TOKEN_ENV, timeout_seconds: 120, max_attempts: 3 },
    database: { url_env: DATABASE_URL_ENV },
    http: { listen: "127.0.0.1:0" },
    max_concurrent_mirrors: MAX_CONCURRENT_MIRRORS,
    defaults: {
      incremental_cron: cronAt(tick),
      // Midnight on 1 January: never during a bench.
      full_cron: "0 0 0 1 1 *",
      timezone: "UTC",
      poll_initial_seconds: ctx.pollSeconds,
      poll_max_seconds: ctx.pollMaxSeconds,
    },
    mirrors: configIds.map((id, i) => ({ name: `m${i + 1}`, sync_config_id: id })),
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  const env = { ...process.env, [TOKEN_ENV]: sim.token, [DATABASE_URL_ENV]: databaseUrl };
  const logs = Array.from({ length: replicas }, (_, i) => join(ctx.dir, `replicas-${replicas}-${i + 1}.log`));
  const children = logs.map((log) => {
    const fd = openSync(log, "w");
    const child = spawn(process.execPath, [ctx.mirrorCli, "run", "--config", configPath], {
      env,
      stdio: ["ignore", fd, fd],
    });
    closeSync(fd);
    return child;
  });
  const peaks = new Map<ChildProcess, number>();
  const sampler = setInterval(() => {
    for (const child of children) peaks.set(child, Math.max(peaks.get(child) ?? 0, vmHwmKb(child.pid)));
  }, 200);
  try {
    const doneAt = await waitAllDone(databaseUrl, configIds.length, children);
    const cpuSeconds = children.reduce((sum, c) => {
      const cpu = readCpuSeconds(c.pid ?? -1);
      return sum + cpu.user + cpu.system;
    }, 0);
    const [counts] = await pgQuery<{ triggers: string; rows: string }>(
      databaseUrl,
      "SELECT (SELECT count(*) FROM triggers) AS triggers, (SELECT count(*) FROM resource_access) AS rows",
    );
    return {
      replicas,
      wallMs: doneAt - tick.getTime(),
      triggers: Number(counts?.triggers ?? 0),
      rows: Number(counts?.rows ?? 0),
      cpuSeconds,
      peakRssKb: Math.max(0, ...peaks.values()),
      lastStartedMs: Math.max(...logs.map(startedAt)) - tick.getTime(),
    };
  } finally {
    clearInterval(sampler);
    await Promise.all(children.map(stop));
  }
}

/** Polls `triggers` until every mirror has a `done` one; fails early when a replica exits. */
async function waitAllDone(databaseUrl: string, mirrors: number, children: ChildProcess[]): Promise<number> {
  const deadline = Date.now() + DONE_TIMEOUT_MS;
  for (;;) {
    const exited = children.find((c) => c.exitCode !== null);
    if (exited) throw new Error(`a replica exited with ${exited.exitCode} before every mirror was done`);
    try {
      const [row] = await pgQuery<{ n: string }>(
        databaseUrl,
        "SELECT count(DISTINCT mirror) AS n FROM triggers WHERE state = 'done'",
      );
      if (Number(row?.n ?? 0) >= mirrors) return Date.now();
    } catch {
      // The replicas have not migrated the database yet.
    }
    if (Date.now() > deadline)
      throw new Error(`not every mirror was done within ${DONE_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function vmHwmKb(pid: number | undefined): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Time of the replica's "daemon started" log line (pino JSON), NaN when it has none. */
function startedAt(log: string): number {
  const line = readFileSync(log, "utf8")
    .split("\n")
    .find((l) => l.includes('"daemon started"'));
  return line ? Date.parse((JSON.parse(line) as { time: string }).time) : Number.NaN;
}

/** SIGTERM, then SIGKILL if the replica has not exited within 30 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
}

/** "## Scale-out: replicas on one PostgreSQL database". */
export function replicaSection(
  result: ReplicaResult | undefined,
  skipped: string | undefined,
  table: (header: string[], rows: (string | number)[][]) => string[],
): string[] {
  const head = ["## Scale-out: replicas on one PostgreSQL database", ""];
  if (!result) return [...head, skipped ?? "not run", ""];
  const one = result.runs.find((r) => r.replicas === 1);
  const s = (ms: number) => (ms / 1000).toFixed(1);
  return [
    ...head,
    `${result.mirrors} mirrors (sync configs created through POST /sync-configs, each over the same ${result.users} users and servers, ` +
      `${result.docs} documents), each replica with \`max_concurrent_mirrors: ${MAX_CONCURRENT_MIRRORS}\`, on a fresh database per row. ` +
      `Every mirror's incremental_cron fires once, ${TICK_LEAD_MS / 1000} s after the replicas are spawned; wall time runs from that tick until ` +
      "the `triggers` table holds a `done` trigger for every mirror (their first, cold, passes). CPU is all replicas' together, up to that moment.",
    "",
    ...table(
      [
        "Replicas",
        "Wall s, tick to all done",
        "Speed-up vs 1",
        "Triggers",
        "Rows",
        "Rows/s",
        "CPU s",
        "Largest peak RSS MB",
        "Last replica started, s before the tick",
      ],
      result.runs.map((r) => [
        r.replicas,
        s(r.wallMs),
        one ? (one.wallMs / r.wallMs).toFixed(2) : "-",
        r.triggers,
        r.rows,
        Math.round(r.rows / (r.wallMs / 1000)),
        r.cpuSeconds.toFixed(1),
        Math.round(r.peakRssKb / 1024),
        Number.isFinite(r.lastStartedMs) ? s(-r.lastStartedMs) : "n/a",
      ]),
    ),
  ];
}
