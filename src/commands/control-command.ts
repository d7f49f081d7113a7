/**
 * What `pause`, `resume` and `trigger` share: `--mirror NAME` (required, a configured mirror, else
 * exit 2), `--json`, the control written to the database without the writer lock (a daemon may hold
 * it: on SQLite the control is one short transaction beside it), and the reply printed.
 */
import type { Config } from "../config.js";
import { DatabaseLockedError, UsageError } from "../errors.js";
import { createLogger } from "../log.js";
import { applyControl, type ControlReply, cliActor } from "../mirror-controls.js";
import { openStore } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import type { Mode } from "../store/types.js";
import type { CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, selectMirrors, writeJson } from "./common.js";
import type { CommandName } from "./help.js";

export interface ParsedControl {
  config: Config;
  mirror: string;
  json: boolean;
  full: boolean;
}

export function parseControlArgs(
  name: CommandName,
  args: string[],
  io: CommandIo,
  withFull = false,
): ParsedControl {
  const { values } = parseCommandArgs(name, args, {
    mirror: { type: "string" },
    json: { type: "boolean", default: false },
    ...(withFull ? { full: { type: "boolean" as const, default: false } } : {}),
  });
  if (values.mirror === undefined) throw new UsageError(`${name} needs --mirror NAME`);
  const config = loadCommandConfig(values.config, io);
  // Refuses a mirror the config does not declare, as `sync --mirror` does.
  selectMirrors(config, [values.mirror]);
  return {
    config,
    mirror: values.mirror,
    json: values.json ?? false,
    full: (values as { full?: boolean }).full ?? false,
  };
}

/**
 * Applies the control on a store opened for it; `then` reads more before it closes. With
 * `tryLock`, the store is opened with the writer lock when it is free (SQLite: no daemon holds the
 * database, and the heartbeats a dead one left are cleared), `heldElsewhere` saying when it was not.
 * `before` runs on that store ahead of the control: what it throws leaves nothing recorded.
 */
export async function withControl<T>(
  parsed: ParsedControl,
  action: "pause" | "resume" | "trigger",
  then: (reply: ControlReply, store: Store, heldElsewhere: boolean) => Promise<T>,
  options: {
    mode?: Mode;
    tryLock?: boolean;
    before?: (store: Store, heldElsewhere: boolean) => Promise<void>;
  } = {},
): Promise<T> {
  const log = createLogger({ level: "warn", name: "syncmirror" });
  let heldElsewhere = false;
  let store: Store;
  try {
    store = await openStore(parsed.config, { lock: options.tryLock ?? false, log });
  } catch (error) {
    if (!(error instanceof DatabaseLockedError)) throw error;
    heldElsewhere = true;
    store = await openStore(parsed.config, { lock: false, log });
  }
  const { mode } = options;
  try {
    await options.before?.(store, heldElsewhere);
    const reply = await applyControl(store, {
      mirror: parsed.mirror,
      action,
      ...(mode === undefined ? {} : { mode }),
      actor: cliActor(),
      now: new Date(),
    });
    return await then(reply, store, heldElsewhere);
  } finally {
    await store.close();
  }
}

export function printReply<R extends { message: string }>(io: CommandIo, json: boolean, reply: R): void {
  if (json) writeJson(io, reply);
  else io.stdout.write(`${reply.message}\n`);
}
