/**
 * `syncmirror search --user EMAIL [--mirror NAME] [--limit N] [--json] QUERY`: the user's live
 * matching resources, best first, as `/v1/search` answers. Reads only; works beside a daemon.
 */
import { searchJson } from "../consumers/feed-json.js";
import { parseSearchParams } from "../consumers/params.js";
import { SearchQueryError, SearchUnavailableError, UsageError } from "../errors.js";
import { createLogger } from "../log.js";
import type { SearchHit } from "../store/consumer-types.js";
import { openStore } from "../store/open-store.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const search: Command = (args, io) =>
  withErrors(io, async () => {
    const { values, positionals } = parseCommandArgs(
      "search",
      args,
      {
        user: { type: "string" },
        mirror: { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean", default: false },
      },
      true,
    );
    const config = loadCommandConfig(values.config, io);
    const params = parseSearchParams(
      { user: values.user, q: positionals.join(" "), limit: values.limit, mirror: values.mirror },
      config.mirrors.map((m) => m.name),
    );
    if (!config.search.enabled)
      throw new UsageError(
        `search is not enabled: set search.enabled: true in ${config.file}, then run syncmirror reindex`,
      );
    const store = await openStore(config, {
      lock: false,
      log: createLogger({ level: "warn", name: "syncmirror" }),
    });
    try {
      const hits = await store.search.query({
        userEmail: params.user,
        mirror: params.mirror,
        query: params.q,
        limit: params.limit,
      });
      io.stdout.write(values.json ? `${JSON.stringify(searchJson(hits), null, 2)}\n` : formatHits(hits));
      return 0;
    } catch (error) {
      // Both are the caller's to fix (the query, the config): exit 2 like any bad usage.
      if (error instanceof SearchQueryError || error instanceof SearchUnavailableError)
        throw new UsageError(error.message, { cause: error });
      throw error;
    } finally {
      await store.close();
    }
  });

function formatHits(hits: readonly SearchHit[]): string {
  if (hits.length === 0) return "no results\n";
  return hits
    .map((h) => `${h.title ?? "(untitled)"}  [${h.sourceType}]  ${h.url ?? ""}\n  ${h.snippet}\n  ${h.key}\n`)
    .join("");
}
