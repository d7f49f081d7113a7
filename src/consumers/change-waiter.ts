/**
 * Long-polling the change feed: read, and when nothing is new, wait for the store to say the feed
 * may hold something new (a commit of this process or of another one: `Store.feed.waitForChange`)
 * and read again, until something arrives, the wait runs out or the request is abandoned.
 */
import type { FeedPage } from "../store/consumer-types.js";

export interface WaitOptions {
  /** `Store.feed.waitForChange`: resolves once the feed may hold something new, or `signal` aborts. */
  nextChange: (signal: AbortSignal) => Promise<void>;
  waitMs: number;
  /** Aborted when the client goes away or the daemon stops: answer with what there is. */
  signal: AbortSignal;
}

export async function readChangesWaiting(read: () => Promise<FeedPage>, o: WaitOptions): Promise<FeedPage> {
  const deadline = performance.now() + o.waitMs;
  for (;;) {
    // Armed before reading, so a commit landing between the read and the wait still wakes us.
    const armed = new AbortController();
    const change = o.nextChange(armed.signal);
    try {
      const page = await read();
      const leftMs = deadline - performance.now();
      if (page.changes.length > 0 || leftMs <= 0 || o.signal.aborted) return page;
      if (!(await firstOf(change, leftMs, o.signal))) return page;
    } finally {
      armed.abort();
    }
  }
}

/** True when the change came first; false on timeout or abort. */
function firstOf(change: Promise<void>, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    void change.then(() => done(true));
  });
}
