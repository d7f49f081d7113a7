/**
 * Who holds a mirror's lease: a process start's random instance id with `hostname:pid` for people,
 * the scope in which that pid names a process, and whether such a holder here is gone.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import type { Lease, LeaseHolder, Replica } from "./store/types.js";

/** This process start: a random instance id, `hostname:pid` for people, and its pid's scope. */
export function createLeaseHolder(): LeaseHolder {
  return { id: randomUUID(), name: `${hostname()}:${process.pid}`, scope: pidScope() };
}

let scope: string | null | undefined;

/**
 * Where this process's pid means this process: the machine's boot and the pid namespace (Linux).
 * Containers on one host may share a hostname (host networking, a fixed `hostname:`) while each
 * numbers its processes from 1, so a pid alone would name another container's process, or none.
 * Null where either cannot be read (another OS, a sandboxed /proc): such a lease only expires.
 */
function pidScope(): string | null {
  if (scope !== undefined) return scope;
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    scope = `${boot}/${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    scope = null;
  }
  return scope;
}

/**
 * A holder whose process is gone (killed, crashed) from this very host, boot and pid namespace:
 * its lease need not run out before another process here takes the mirror over. A pid reused
 * since reads as alive, and so waits for the lease to expire, as does any holder elsewhere.
 */
export function isDeadHereAndNow(lease: Pick<Lease, "holderName" | "holderScope">): boolean {
  const at = lease.holderName.lastIndexOf(":");
  const host = lease.holderName.slice(0, at);
  const pid = Number(lease.holderName.slice(at + 1));
  const here = pidScope();
  if (here === null || lease.holderScope !== here || host !== hostname()) return false;
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * The daemons whose heartbeat has not expired, less those killed on this host: `status` would list
 * them alive, and `trigger` leave its pass to them, for up to a lease. One elsewhere only expires.
 */
export function runningReplicas(replicas: readonly Replica[]): Replica[] {
  return replicas.filter((r) => !isDeadHereAndNow({ holderName: r.name, holderScope: r.scope }));
}
