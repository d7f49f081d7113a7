/**
 * Who holds a mirror's lease: a process start's random instance id with `hostname:pid` for people,
 * and whether such a holder on this host is gone.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { LeaseHolder } from "./store/types.js";

/** This process start: a random instance id, and `hostname:pid` for people. */
export function createLeaseHolder(): LeaseHolder {
  return { id: randomUUID(), name: `${hostname()}:${process.pid}` };
}

/**
 * A holder on this host whose process is gone (killed, crashed): its lease need not run out before
 * a restarted process on the same host takes the mirror over. Judged by its `hostname:pid`; were
 * that another pid namespace's process, taking its lease early only costs it its pass, never a
 * write (the epoch fences it).
 */
export function isDeadHereAndNow(name: string): boolean {
  const at = name.lastIndexOf(":");
  const host = name.slice(0, at);
  const pid = Number(name.slice(at + 1));
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
