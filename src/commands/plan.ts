/**
 * `syncmirror plan [--json]`: per mirror, what `apply` would change upstream (docs/declared-sync-configs.md). Reads the service and the database, takes no lock, changes nothing. Exit 0 nothing to
 * change, 3 changes pending (so CI can gate on drift), 1 problems, 2 bad config.
 */

import { createConfiguredApi, createIoLogger } from "../runtime.js";
import { openStoreForReading } from "../store/open-store.js";
import { formatPlan, planJson } from "../sync-configs/format.js";
import { planExitCode, planSyncConfigs } from "../sync-configs/plan.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const plan: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("plan", args, { json: { type: "boolean", default: false } });
    const config = loadCommandConfig(values.config, io);
    const log = createIoLogger(io);
    const api = createConfiguredApi(config, log);
    try {
      const store = await openStoreForReading(config, log);
      try {
        const entries = await planSyncConfigs(config, { api, store, signal: io.signal });
        io.stdout.write(
          values.json ? `${JSON.stringify(planJson(entries), null, 2)}\n` : formatPlan(entries),
        );
        return planExitCode(entries);
      } finally {
        await store.close();
      }
    } finally {
      await api.close();
    }
  });
