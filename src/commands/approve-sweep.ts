/**
 * `syncmirror approve-sweep --mirror NAME [--json]`: lets the next full pass apply the revocations
 * the mass-delete guard held (one-shot, in the database: whichever process runs that pass obeys
 * it). Exit 0 approved, 1 nothing held, 2 bad usage. Works beside a running daemon.
 */
import { hostname, userInfo } from "node:os";
import { approveSweep as approve } from "../console/approve-sweep.js";
import { parseApproveParams } from "../console/params.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors, withStoreUnlocked } from "./common.js";

export const approveSweep: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("approve-sweep", args, {
      mirror: { type: "string" },
      json: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    const { mirror } = parseApproveParams(
      { mirror: values.mirror },
      config.mirrors.map((m) => m.name),
      { mirror: "--mirror" },
    );
    const approval = await withStoreUnlocked(config, (store) =>
      approve(store, mirror, operator(), new Date()),
    );
    io.stdout.write(values.json ? `${JSON.stringify(approval, null, 2)}\n` : `${approval.message}\n`);
    return 0;
  });

/** Who approved, for the history: the OS user at this host. */
function operator(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = "unknown";
  }
  return `${user}@${hostname()}`;
}
