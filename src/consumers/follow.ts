/**
 * Following the change feed onto a stream (`syncmirror changes --follow`): one page per line, read
 * only once the reader has taken the page before it, and stopped between two pages. Reading on
 * while `write()` said the stream was full buffered the whole feed in memory behind a reader that
 * had stalled (422 MB at 60,000 documents), and a stop was heard only once the feed was caught up.
 */
import type { Writable } from "node:stream";
import { setImmediate as nextTurn } from "node:timers/promises";
import { stringifyExact } from "../exact-json.js";
import type { FeedPage } from "../store/consumer-types.js";
import { feedPageJson } from "./feed-json.js";

export interface FollowOptions {
  read: (after: number) => Promise<FeedPage>;
  /** `Store.feed.waitForChange`. */
  nextChange: (signal: AbortSignal) => Promise<void>;
  out: Writable;
  /** Ends the loop between two pages, while waiting for the reader or for a change. */
  signal: AbortSignal;
  /** After each page handed to `out` (the crash seam). */
  printed?: () => void;
  /** When the reader has not taken the last page yet and the next read waits for it. */
  waiting?: () => void;
}

export async function followChanges(after: number, o: FollowOptions): Promise<void> {
  let cursor = after;
  while (!o.signal.aborted) {
    // Armed before reading, so a commit landing during the read still wakes the wait below.
    const changed = o.nextChange(o.signal);
    let more = true;
    while (more && !o.signal.aborted) {
      const page = await o.read(cursor);
      cursor = page.nextAfter;
      more = page.hasMore;
      if (page.changes.length === 0) continue;
      const taken = o.out.write(`${stringifyExact(feedPageJson(page))}\n`);
      o.printed?.();
      if (!taken) {
        o.waiting?.();
        await drained(o.out, o.signal);
      }
      // Reads that never wait (SQLite's) and drains answered at once would otherwise hold the event
      // loop past a signal, which is handled only once the loop has polled.
      await nextTurn();
    }
    await changed;
  }
}

/** Resolves once `out` wants more, is gone (its error is the CLI's to handle), or `signal` aborts. */
function drained(out: Writable, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off("drain", done);
      out.off("close", done);
      out.off("error", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    if (signal.aborted) {
      resolve();
      return;
    }
    out.on("drain", done);
    out.on("close", done);
    out.on("error", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
