/**
 * `syncmirror plan [--json]`: per mirror, what `apply` would change upstream (docs/declared-sync-configs.md). Reads the service and the database, takes no lock, changes nothing. Exit 0 nothing to
 * change, 3 changes pending (so CI can gate on drift), 1 problems, 2 bad config.
 */

import { createConfiguredApi, createIoLogger } from "../runtime.js";
import { openStoreForReading } from "../store/open-store.js";
import { formatPlan, planFailedJson, planJson } from "../sync-configs/format.js";
import { planExitCode, planSyncConfigs } from "../sync-configs/plan.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors, withJsonFailure, writeJson } from "./common.js";

export const plan: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("plan", args, { json: { type: "boolean", default: false } });
    const config = loadCommandConfig(values.config, io);
    const json = values.json ?? false;
    const log = createIoLogger(io);
    const api = createConfiguredApi(config, log, { retriedBy: "operator" });
    try {
      // A script reading --json gets a document that says the plan is unknown, not empty output.
      return await withJsonFailure(
        io,
        json,
        async () => {
          let noMirror: string | undefined;
          const store = await openStoreForReading(config, log, (notice) => {
            noMirror = notice;
          });
          try {
            const entries = await planSyncConfigs(config, { api, store, signal: io.signal });
            if (json) writeJson(io, planJson(entries));
            else io.stdout.write(formatPlan(entries));
            // After the plan: a plan that fails says only why, in its one line.
            if (noMirror) io.stderr.write(`${noMirror}\n`);
            return planExitCode(entries);
          } finally {
            await store.close();
          }
        },
        planFailedJson,
      );
    } finally {
      await api.close();
    }
  });
