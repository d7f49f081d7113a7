/**
 * `syncmirror run`: the daemon, until SIGTERM / SIGINT; then it drains (the current page commits)
 * and exits 0.
 */
import { once } from "node:events";
import { createDaemon } from "../daemon.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const run: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("run", args, {});
    const config = loadCommandConfig(values.config, io);
    const daemon = createDaemon(config, io);
    try {
      await daemon.start();
      if (!io.signal.aborted) await once(io.signal, "abort");
    } finally {
      await daemon.stop();
    }
    return 0;
  });
