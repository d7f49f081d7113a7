/**
 * Replicas as separate processes on one database: their shared config, processes that look alike
 * (pid 1 in a pid namespace of their own, as in containers), pausing and thawing one, and the
 * mirror's rows an assertion compares before and after.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import type { CliProcess, DaemonProcess } from "./daemon.js";
import type { Harness } from "./mirror-harness.js";

/** Merges `defaults` and `database` into the config file the next processes read. */
export function setDefaults(
  h: Harness,
  defaults: Record<string, unknown>,
  database: Record<string, unknown> = {},
): void {
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, Record<string, unknown>>;
  config.defaults = { ...config.defaults, ...defaults };
  config.database = { ...config.database, ...database };
  writeFileSync(h.configPath, stringify(config));
}

const UNSHARE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"];

/**
 * A wrapper that runs node as pid 1 of a pid namespace of its own (every container's process is
 * pid 1, so two replicas on one host print as the same `hostname:pid`), or null where this host
 * does not allow unprivileged namespaces.
 */
export function pidOneWrapper(): readonly string[] | null {
  const probe = spawnSync(UNSHARE[0] as string, [...UNSHARE.slice(1), "true"], { stdio: "ignore" });
  return probe.status === 0 ? UNSHARE : null;
}

/** The pid of node itself: the process, or its wrapper's only child. */
export function nodePid(p: CliProcess, wrapped: boolean): number {
  const pid = p.child.pid as number;
  if (!wrapped) return pid;
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/);
  return Number(children[0]);
}

/** Keys and their content hashes, as the mirror holds them now. */
export function contentHashes(h: Harness): Map<string, string> {
  return new Map(
    h
      .query<{ key: string; content_hash: string }>("SELECT key, content_hash FROM resources")
      .map((r) => [r.key, r.content_hash]),
  );
}

/** Every row a pass writes that a consumer reads: resources, access, the change feed. */
export function mirrorRows(h: Harness): unknown {
  return {
    resources: h.query("SELECT key, content_hash, deleted_at, updated_at FROM resources ORDER BY key"),
    access: h.query(
      "SELECT mirror, user_email, key, last_seen_at FROM resource_access ORDER BY mirror, user_email, key",
    ),
    changes: h.query("SELECT seq, key, op FROM changes ORDER BY seq"),
  };
}

/**
 * Replaces the harness's one mirror by `count` mirrors `m1`..`mN`, each on a sync config of its
 * own (the first the simulator's, the others created alike), and returns their names.
 */
export function useMirrors(h: Harness, count: number): string[] {
  const ids = [h.sim.syncConfigId, ...Array.from({ length: count - 1 }, () => h.sim.configs.create())];
  const names = ids.map((_, i) => `m${i + 1}`);
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, unknown>;
  config.mirrors = ids.map((id, i) => ({ name: names[i], sync_config_id: id }));
  writeFileSync(h.configPath, stringify(config));
  return names;
}

/** A copy of the harness's config changed by `edit`, for one replica configured unlike the others. */
export function replicaConfig(
  h: Harness,
  name: string,
  edit: (config: Record<string, unknown>) => void,
): string {
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, unknown>;
  edit(config);
  const path = join(h.dir, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

/**
 * Every table a pass or its settling writes (the mirror's rows, triggers, runs and sources, lease,
 * schedule, pairs, history and problems): all but the replicas' own heartbeats. PostgreSQL only.
 */
export function rowsAPassWrites(h: Harness): Record<string, unknown[]> {
  const tables = h
    .query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
    .map((t) => t.name)
    .filter((name) => name !== "replicas");
  return Object.fromEntries(tables.map((t) => [t, h.query(`SELECT * FROM ${t} x ORDER BY x::text`)]));
}

/** A daemon's instance id, from its "daemon started" log line. */
export const instanceId = (d: DaemonProcess): string =>
  String(d.logs().find((l) => l.msg === "daemon started")?.instance_id);
