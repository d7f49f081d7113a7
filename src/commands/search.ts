/**
 * `syncmirror search --user EMAIL [--mirror NAME] [--limit N] [--json] QUERY`: the user's live
 * matching resources, best first, as `/v1/search` answers. Reads only; works beside a daemon.
 * The query may also come as `--q QUERY`, the endpoint's name for it, so one written from the
 * other works.
 */
import { searchJson } from "../consumers/feed-json.js";
import { parseSearchParams, type SearchParams } from "../consumers/params.js";
import { searchAsUser } from "../consumers/search-as-user.js";
import { SearchQueryError, SearchUnavailableError, UsageError } from "../errors.js";
import { createLogger } from "../log.js";
import type { SearchHit } from "../store/consumer-types.js";
import { openStore } from "../store/open-store.js";
import { printable } from "../terminal-text.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors, withJsonFailure, writeJson } from "./common.js";

export const search: Command = (args, io) =>
  withErrors(io, async () => {
    const { values, positionals } = parseCommandArgs(
      "search",
      args,
      {
        user: { type: "string" },
        mirror: { type: "string" },
        limit: { type: "string" },
        q: { type: "string" },
        json: { type: "boolean", default: false },
      },
      true,
    );
    if (values.q !== undefined && positionals.length > 0)
      throw new UsageError("QUERY: give it once, either as --q QUERY or after the options, not both");
    const config = loadCommandConfig(values.config, io);
    const mirrors = config.mirrors.map((m) => m.name);
    let params: SearchParams;
    try {
      params = parseSearchParams(
        {
          user: values.user,
          q: values.q ?? positionals.join(" "),
          limit: values.limit,
          mirror: values.mirror,
        },
        mirrors,
        CLI_NAMES,
      );
    } catch (error) {
      throw asUsage(error);
    }
    if (!config.search.enabled)
      throw new UsageError(
        `search is not enabled: set search.enabled: true in ${config.file}, then run syncmirror reindex`,
      );
    const json = values.json ?? false;
    return withJsonFailure(io, json, async () => {
      const store = await openStore(config, {
        lock: false,
        log: createLogger({ level: "warn", name: "syncmirror" }),
      });
      try {
        const found = await searchAsUser(store, params, mirrors);
        const hint = found.unknownUser ? unknownUserHint(params, found.knownUsers) : undefined;
        if (json) {
          writeJson(io, searchJson(found.hits));
          if (hint) io.stderr.write(`syncmirror: ${hint}\n`);
        } else io.stdout.write(hint ? `no results: ${hint}\n` : formatHits(found.hits));
        return 0;
      } catch (error) {
        throw asUsage(error);
      } finally {
        await store.close();
      }
    });
  });

/** A refused query or a search turned off is the caller's to fix: exit 2 like any bad usage. */
function asUsage(error: unknown): unknown {
  return error instanceof SearchQueryError || error instanceof SearchUnavailableError
    ? new UsageError(error.message, { cause: error })
    : error;
}

/** The CLI's names for the parameters /v1/search shares with it. */
const CLI_NAMES = { user: "--user", q: "QUERY", limit: "--limit", mirror: "--mirror" };

/**
 * Three lines per hit; titles and snippets are folded onto their line, so a newline in a document
 * cannot break the layout, and any other control character in a document is shown as `\xHH`, so
 * an escape sequence in a title cannot drive the terminal.
 */
function formatHits(hits: readonly SearchHit[]): string {
  if (hits.length === 0) return "no results\n";
  const line = (text: string) => printable(text.replace(/\s+/g, " ").trim());
  return hits
    .map(
      (h) =>
        `${line(h.title ?? "(untitled)")}  [${line(h.sourceType)}]  ${line(h.url ?? "")}\n  ${line(h.snippet)}\n  ${printable(h.key)}\n`,
    )
    .join("");
}

function unknownUserHint(params: SearchParams, knownUsers: readonly string[]): string {
  const where = params.mirror === undefined ? "any mirror" : `mirror ${params.mirror}`;
  const known =
    knownUsers.length > 0
      ? ` (users there include ${knownUsers.join(", ")})`
      : " (it has no users yet: sync first)";
  return `no user ${params.user} in ${where}${known}; search runs as a user the sync configs cover`;
}
