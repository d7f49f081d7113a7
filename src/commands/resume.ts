/**
 * `syncmirror resume --mirror NAME [--json]`: the mirror's scheduled passes run again from its next
 * scheduled time. Exit 0; 2 bad usage, unknown mirror.
 */
import type { Command } from "./command.js";
import { withErrors, withJsonFailure } from "./common.js";
import { parseControlArgs, printReply, withControl } from "./control-command.js";

export const resume: Command = (args, io) =>
  withErrors(io, async () => {
    const parsed = parseControlArgs("resume", args, io);
    await withJsonFailure(io, parsed.json, () =>
      withControl(parsed, "resume", async (reply) => printReply(io, parsed.json, reply)),
    );
    return 0;
  });
