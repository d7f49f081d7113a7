/**
 * `syncmirror forget --mirror NAME [--json]`: revokes every access a mirror removed from the config
 * still grants, then deletes its state (`sync/forget.ts`). Exit 0 forgotten; 1 its lease is held
 * elsewhere (nothing done), the database does not answer; 2 bad usage, a mirror still in the
 * config or unknown to the database.
 */
import { Registry } from "prom-client";
import { UsageError } from "../errors.js";
import { createLeaseHolder } from "../lease-holder.js";
import { createLogger } from "../log.js";
import { createMetrics } from "../metrics.js";
import { createCrashPoint } from "../runtime.js";
import { forgetMirror } from "../sync/forget.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, printFromStore, withErrors } from "./common.js";

export const forget: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("forget", args, {
      mirror: { type: "string" },
      json: { type: "boolean", default: false },
    });
    const mirror = values.mirror;
    if (mirror === undefined) throw new UsageError("forget needs --mirror NAME");
    const config = loadCommandConfig(values.config, io);
    await printFromStore(
      io,
      config,
      values.json ?? false,
      (store) =>
        forgetMirror(mirror, {
          store,
          configured: config.mirrors.map((m) => m.name),
          holder: createLeaseHolder(),
          leaseSeconds: config.database.leaseSeconds,
          signal: io.signal,
          log: createLogger({ level: "warn", name: "syncmirror" }),
          // A one-shot command's registry is never scraped; the lease and the revocations count into it as a pass's do.
          metrics: createMetrics(new Registry(), { defaultMetrics: false }),
          now: () => new Date(),
          crashPoint: createCrashPoint(io.env),
        }),
      (forgotten) => `${forgotten.message}\n`,
    );
    return 0;
  });
