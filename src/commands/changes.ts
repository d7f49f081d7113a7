/**
 * `syncmirror changes --after SEQ [--limit N] [--mirror NAME] [--wait SECONDS | --follow]`: the
 * change feed as `/v1/changes` serves it, for scripts. Takes no lock, so it works beside a running
 * daemon. `--wait` is the endpoint's long poll: one page, printed as soon as a change commits or
 * empty when the wait runs out. `--follow` prints one page per line (JSON Lines) and keeps going
 * until SIGINT / SIGTERM (`consumers/follow.ts`), reading each page once the reader took the last.
 */
import { readChangesWaiting } from "../consumers/change-waiter.js";
import { feedPageJson } from "../consumers/feed-json.js";
import { followChanges } from "../consumers/follow.js";
import { parseFeedParams } from "../consumers/params.js";
import { UsageError } from "../errors.js";
import { stringifyExact } from "../exact-json.js";
import { createLogger } from "../log.js";
import { createCrashPoint, createIoLogger } from "../runtime.js";
import { openStore } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const changes: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("changes", args, {
      after: { type: "string" },
      limit: { type: "string" },
      mirror: { type: "string" },
      wait: { type: "string" },
      follow: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    if (values.follow && values.wait !== undefined)
      throw new UsageError("--wait: not with --follow, which waits for every next change already");
    // Opened only when the input is good, or to ask whether it knows a mirror the config does not name.
    let opened: Store | undefined;
    const open = async () => {
      opened ??= await openStore(config, {
        lock: false,
        log: createLogger({ level: "warn", name: "syncmirror" }),
      });
      return opened;
    };
    try {
      const params = await parseFeedParams(
        { after: values.after, limit: values.limit, mirror: values.mirror, wait: values.wait },
        config.mirrors.map((m) => m.name),
        async (mirror) => (await open()).mirrors.known(mirror),
        { after: "--after", limit: "--limit", mirror: "--mirror", wait: "--wait" },
      );
      const store = await open();
      if (!values.follow) {
        const read = () => store.feed.readChanges(params);
        const page =
          params.wait === 0
            ? await read()
            : await readChangesWaiting(read, {
                nextChange: store.feed.waitForChange,
                waitMs: params.wait * 1000,
                signal: io.signal,
              });
        io.stdout.write(`${stringifyExact(feedPageJson(page))}\n`);
        return 0;
      }
      const log = createIoLogger(io);
      const crashPoint = createCrashPoint(io.env);
      await followChanges(params.after, {
        read: (after) => store.feed.readChanges({ ...params, after }),
        nextChange: store.feed.waitForChange,
        out: io.stdout,
        signal: io.signal,
        printed: () => crashPoint("feed-page"),
        waiting: () =>
          log.debug("stdout is full: waiting for the reader to take the page before reading the next"),
      });
      return 0;
    } finally {
      await opened?.close();
    }
  });
