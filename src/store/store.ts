/**
 * Everything the sync needs from the database, built once per open database.
 */
import { createAccessStore } from "./access.js";
import { createChangeStore } from "./changes.js";
import type { OpenDatabase } from "./db.js";
import { createDryRunStore } from "./dry-run.js";
import { createPairStore } from "./pairs.js";
import { createResourceStore } from "./resources.js";
import { createStateStore } from "./state.js";

export function createStore(open: OpenDatabase) {
  const { db } = open;
  return {
    /** Runs `fn` in one synchronous transaction: no await and no HTTP inside. */
    transaction<T>(fn: () => T): T {
      return open.sqlite.transaction(fn)();
    },
    resources: createResourceStore(db),
    access: createAccessStore(db),
    changes: createChangeStore(db),
    pairs: createPairStore(db),
    state: createStateStore(db),
    dryRun: createDryRunStore(open),
  };
}

export type Store = ReturnType<typeof createStore>;
