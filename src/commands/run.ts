/**
 * `syncmirror run`: the daemon, until SIGTERM / SIGINT; then it drains (the current page commits)
 * and exits 0 within 10 s. A drain the database keeps waiting (a row another session holds locked,
 * a lock a migration holds, a server that stopped answering) is cut short: whatever was not
 * committed is rolled back with the connection and resumed by the next start, as after a crash.
 */
import { once } from "node:events";
import { setTimeout as sleepTimer } from "node:timers/promises";
import { createDaemon } from "../daemon.js";
import type { Logger } from "../log.js";
import { createIoLogger } from "../runtime.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

/** From the signal; the CLI's own last resort adds at most 2 s before the process exits. */
const DRAIN_DEADLINE_MS = 6000;

export const run: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("run", args, {});
    const config = loadCommandConfig(values.config, io);
    const log = createIoLogger(io);
    const daemon = createDaemon(config, io, { log });
    const stopped = new AbortController();
    const lived = (async () => {
      try {
        await daemon.start();
        if (!io.signal.aborted) await once(io.signal, "abort");
      } finally {
        await daemon.stop();
      }
    })().finally(() => stopped.abort());
    await Promise.race([lived, drainDeadline(io.signal, stopped.signal, log)]);
    return 0;
  });

/** Resolves DRAIN_DEADLINE_MS after the stop was asked for, unless the daemon stopped first. */
async function drainDeadline(stop: AbortSignal, stopped: AbortSignal, log: Logger): Promise<void> {
  try {
    if (!stop.aborted) await once(stop, "abort", { signal: stopped });
    await sleepTimer(DRAIN_DEADLINE_MS, undefined, { signal: stopped });
  } catch {
    // The daemon stopped (or failed to start) first: `lived` settles the race.
    return new Promise<void>(() => {});
  }
  log.warn(
    { waited_ms: DRAIN_DEADLINE_MS },
    "the drain did not finish in time (the database keeps a query waiting); exiting: what was not committed is rolled back and the next start resumes it",
  );
}
