/**
 * The pass-wide budget of export pages fetched ahead of the page each run needs next. Runs exported
 * side by side already overlap their requests, so each run beyond the first uses one page of the
 * budget: a pass of many runs holds about as many pages as it has runs open (memory does not grow
 * with the size of the runs), while one large run gets the whole budget to hide the latency. A 429 from
 * the service halves it (down to none: plain sequential paging); each window's worth of pages
 * answered without one grows it back by a page, up to the configured size (additive increase,
 * multiplicative decrease, as TCP does). Pages already requested are never cancelled by a shrink:
 * the budget only holds back new requests until enough slots come back.
 */
export interface PageWindow {
  /** Takes a slot for one page fetched ahead; false when the window is full. */
  tryTake(): boolean;
  /** Returns a slot: its page was handed to the ingest, dropped, or failed. */
  give(): void;
  /** A run's export began; `runClosed` when it ends. */
  runOpened(): void;
  runClosed(): void;
  /** The service answered 429 to an export page. */
  throttled(): void;
  /** An export page was answered. */
  answered(): void;
  /** Pages that may be fetched ahead now. */
  readonly size: number;
  readonly taken: number;
}

export function createPageWindow(maxSize: number): PageWindow {
  let size = maxSize;
  let taken = 0;
  let answeredSinceChange = 0;
  let runs = 0;
  return {
    tryTake() {
      if (taken + Math.max(0, runs - 1) >= size) return false;
      taken++;
      return true;
    },
    give() {
      taken = Math.max(0, taken - 1);
    },
    runOpened() {
      runs++;
    },
    runClosed() {
      runs = Math.max(0, runs - 1);
    },
    throttled() {
      size = Math.floor(size / 2);
      answeredSinceChange = 0;
    },
    answered() {
      if (size >= maxSize) return;
      answeredSinceChange++;
      if (answeredSinceChange >= Math.max(1, size)) {
        size++;
        answeredSinceChange = 0;
      }
    },
    get size() {
      return size;
    },
    get taken() {
      return taken;
    },
  };
}
