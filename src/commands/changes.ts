/**
 * `syncmirror changes --after SEQ [--limit N] [--mirror NAME] [--follow]`: the change feed as
 * `/v1/changes` serves it, for scripts. Takes no lock, so it works beside a running daemon.
 * `--follow` prints one page per line (JSON Lines) and keeps going until SIGINT / SIGTERM.
 */
import { setTimeout as sleepTimer } from "node:timers/promises";
import { feedPageJson } from "../consumers/feed-json.js";
import { type FeedParams, parseFeedParams } from "../consumers/params.js";
import { createLogger } from "../log.js";
import { type AnyStore, openStore } from "../open-store.js";
import type { Command, CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

/**
 * SQLite has no cross-process notification: once caught up, `--follow` checks `PRAGMA
 * data_version` (one cheap read) at this interval. PostgreSQL's store wakes it on the NOTIFY every
 * commit that records changes sends; the interval is then only a backstop.
 */
const FOLLOW_CHECK_MS = 250;
const FOLLOW_BACKSTOP_MS = 30_000;

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

async function follow(store: AnyStore, params: FeedParams, io: CommandIo): Promise<void> {
  const changed = changeProbe(store);
  let after = params.after;
  while (!io.signal.aborted) {
    // Armed before reading, so a commit landing during the read still wakes the wait below.
    const woken = nextWake(store, io.signal);
    if (changed()) {
      for (;;) {
        const page = await store.feed.readChanges({ ...params, after });
        if (page.changes.length > 0) io.stdout.write(`${JSON.stringify(feedPageJson(page))}\n`);
        after = page.nextAfter;
        if (!page.hasMore) break;
      }
    }
    await woken;
  }
}

/** True when the database may hold something new since the last call. */
function changeProbe(store: AnyStore): () => boolean {
  if (store.dialect !== "sqlite") return () => true;
  let seenVersion = -1;
  return () => {
    const version = store.database.sqlite.pragma("data_version", { simple: true }) as number;
    const changed = version !== seenVersion;
    seenVersion = version;
    return changed;
  };
}

async function nextWake(store: AnyStore, signal: AbortSignal): Promise<void> {
  if (store.dialect === "sqlite") {
    await sleepTimer(FOLLOW_CHECK_MS, undefined, { signal }).catch(() => {});
    return;
  }
  const backstop = new AbortController();
  let unsubscribe = () => {};
  const committed = new Promise<void>((resolve) => {
    unsubscribe = store.onCommit(resolve);
  });
  await Promise.race([
    committed,
    sleepTimer(FOLLOW_BACKSTOP_MS, undefined, { signal: AbortSignal.any([signal, backstop.signal]) }).catch(
      () => {},
    ),
  ]);
  unsubscribe();
  backstop.abort();
}
