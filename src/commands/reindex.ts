/**
 * `syncmirror reindex [--mirror NAME]...`: builds (or rebuilds) the search index from the live
 * resources (`SearchIndex.rebuild`). The index is one for every mirror (a key two mirrors share is
 * indexed once), so naming a mirror checks the name and rebuilds the whole index, that mirror's
 * keys included. On SQLite it takes the writer lock, so run it while the daemon is stopped; on
 * PostgreSQL it rebuilds beside the index in use, so readers and writers carry on.
 */
import { UsageError } from "../errors.js";
import { createLogger } from "../log.js";
import { openStore } from "../store/open-store.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, selectMirrors, withErrors } from "./common.js";

export const reindex: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("reindex", args, { mirror: { type: "string", multiple: true } });
    const config = loadCommandConfig(values.config, io);
    selectMirrors(config, values.mirror ?? []);
    if (!config.search.enabled)
      throw new UsageError(`search is not enabled: set search.enabled: true in ${config.file} first`);
    const store = await openStore(config, {
      lock: true,
      log: createLogger({ level: "warn", name: "syncmirror" }),
    });
    try {
      const startedMs = performance.now();
      const { indexed } = await store.search.rebuild();
      const seconds = ((performance.now() - startedMs) / 1000).toFixed(1);
      io.stdout.write(`search index rebuilt: ${indexed} live resources in ${seconds} s\n`);
      return 0;
    } finally {
      await store.close();
    }
  });
