/**
 * `syncmirror changes --after SEQ [--limit N] [--mirror NAME] [--follow]`: the change feed as
 * `/v1/changes` serves it, for scripts. Takes no lock, so it works beside a running daemon.
 * `--follow` prints one page per line (JSON Lines) and keeps going until SIGINT / SIGTERM.
 */
import { feedPageJson } from "../consumers/feed-json.js";
import { type FeedParams, parseFeedParams } from "../consumers/params.js";
import { createLogger } from "../log.js";
import { openStore } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import type { Command, CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const changes: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("changes", args, {
      after: { type: "string" },
      limit: { type: "string" },
      mirror: { type: "string" },
      follow: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    const params = parseFeedParams(
      { after: values.after, limit: values.limit, mirror: values.mirror },
      config.mirrors.map((m) => m.name),
      { after: "--after", limit: "--limit", mirror: "--mirror" },
    );
    const store = await openStore(config, {
      lock: false,
      log: createLogger({ level: "warn", name: "syncmirror" }),
    });
    try {
      if (!values.follow) {
        io.stdout.write(`${JSON.stringify(feedPageJson(await store.feed.readChanges(params)))}\n`);
        return 0;
      }
      await follow(store, params, io);
      return 0;
    } finally {
      await store.close();
    }
  });

/** Once caught up, waits for the store to say the feed may hold something new (`waitForChange`). */
async function follow(store: Store, params: FeedParams, io: CommandIo): Promise<void> {
  let after = params.after;
  while (!io.signal.aborted) {
    // Armed before reading, so a commit landing during the read still wakes the wait below.
    const changed = store.feed.waitForChange(io.signal);
    for (;;) {
      const page = await store.feed.readChanges({ ...params, after });
      if (page.changes.length > 0) io.stdout.write(`${JSON.stringify(feedPageJson(page))}\n`);
      after = page.nextAfter;
      if (!page.hasMore) break;
    }
    await changed;
  }
}
