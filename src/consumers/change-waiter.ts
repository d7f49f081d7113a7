/**
 * Long-polling the change feed: read, and when nothing is new, wait for the daemon's next commit
 * (not a timer loop) and read again, until something arrives, the wait runs out or the request
 * is abandoned.
 */
import type { FeedPage } from "../store/consumer-types.js";

export type OnCommit = (listener: () => void) => () => void;

export interface WaitOptions {
  onCommit: OnCommit;
  waitMs: number;
  /** Aborted when the client goes away or the daemon stops: answer with what there is. */
  signal: AbortSignal;
}

export async function readChangesWaiting(read: () => Promise<FeedPage>, o: WaitOptions): Promise<FeedPage> {
  const deadline = performance.now() + o.waitMs;
  for (;;) {
    // Subscribed before reading, so a commit landing between the read and the wait still wakes us.
    const commit = nextCommit(o.onCommit);
    try {
      const page = await read();
      const leftMs = deadline - performance.now();
      if (page.changes.length > 0 || leftMs <= 0 || o.signal.aborted) return page;
      if (!(await firstOf(commit.promise, leftMs, o.signal))) return page;
    } finally {
      commit.cancel();
    }
  }
}

function nextCommit(onCommit: OnCommit): { promise: Promise<void>; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<void>((resolve) => {
    cancel = onCommit(resolve);
  });
  return { promise, cancel };
}

/** True when the commit came first; false on timeout or abort. */
function firstOf(commit: Promise<void>, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    void commit.then(() => done(true));
  });
}
