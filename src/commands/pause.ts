/**
 * `syncmirror pause --mirror NAME [--json]`: the mirror's scheduled passes are skipped, on every
 * replica, until `resume`; a pass already running is not stopped. Exit 0; 2 bad usage, unknown mirror.
 */
import type { Command } from "./command.js";
import { withErrors, withJsonFailure } from "./common.js";
import { parseControlArgs, printReply, withControl } from "./control-command.js";

export const pause: Command = (args, io) =>
  withErrors(io, async () => {
    const parsed = parseControlArgs("pause", args, io);
    await withJsonFailure(io, parsed.json, () =>
      withControl(parsed, "pause", async (reply) => printReply(io, parsed.json, reply)),
    );
    return 0;
  });
