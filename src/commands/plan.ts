/**
 * `syncmirror plan [--json]`: per mirror, what `apply` would change upstream (docs/declared-sync-configs.md). Reads the service and the database, takes no lock, changes nothing. Exit 0 nothing to
 * change, 3 changes pending (so CI can gate on drift), 1 problems, 2 bad config.
 */

import { createConfiguredApi, createIoLogger } from "../runtime.js";
import { openStoreForReading } from "../store/open-store.js";
import { formatPlan, planFailedJson, planJson } from "../sync-configs/format.js";
import { planExitCode, planSyncConfigs } from "../sync-configs/plan.js";
import type { Command } from "./command.js";
import { jsonFailure, loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const plan: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("plan", args, { json: { type: "boolean", default: false } });
    const config = loadCommandConfig(values.config, io);
    const print = (json: object) => io.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    const log = createIoLogger(io);
    const api = createConfiguredApi(config, log);
    try {
      const store = await openStoreForReading(config, log);
      try {
        const entries = await planSyncConfigs(config, { api, store, signal: io.signal });
        if (values.json) print(planJson(entries));
        else io.stdout.write(formatPlan(entries));
        return planExitCode(entries);
      } finally {
        await store.close();
      }
    } catch (error) {
      // A script reading --json gets a document that says the plan is unknown, not empty output.
      const failure = values.json ? jsonFailure(io, error) : null;
      if (failure) print(planFailedJson(failure));
      throw error;
    } finally {
      await api.close();
    }
  });
