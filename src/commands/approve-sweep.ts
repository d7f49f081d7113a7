/**
 * `syncmirror approve-sweep --mirror NAME [--json]`: lets the next full pass apply the revocations
 * the mass-delete guard held (one-shot, in the database: whichever process runs that pass obeys
 * it). Exit 0 approved, 1 nothing held, 2 bad usage. Works beside a running daemon.
 */
import { approveSweep as approve } from "../console/approve-sweep.js";
import { parseApproveParams } from "../console/params.js";
import { UsageError } from "../errors.js";
import { cliActor } from "../mirror-controls.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, printFromStore, withErrors } from "./common.js";

export const approveSweep: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("approve-sweep", args, {
      mirror: { type: "string" },
      json: { type: "boolean", default: false },
    });
    // Worded as pause, resume and trigger word it, and said before the config is read.
    if (values.mirror === undefined) throw new UsageError("approve-sweep needs --mirror NAME");
    const config = loadCommandConfig(values.config, io);
    const { mirror } = parseApproveParams(
      { mirror: values.mirror },
      config.mirrors.map((m) => m.name),
      { mirror: "--mirror" },
    );
    // Nothing held (exit 1) included: a script reading --json gets `error.code` NOTHING_HELD.
    await printFromStore(
      io,
      config,
      values.json ?? false,
      (store) => approve(store, mirror, cliActor(), new Date()),
      (approval) => `${approval.message}\n`,
    );
    return 0;
  });
