/**
 * The change feed's wake-up (`store.feed.waitForChange`): a commit listener for this process's
 * commits and, for other processes' commits, whatever the driver offers: its notifications feed
 * the same listeners (PostgreSQL LISTEN), or its change version is looked at every 250 ms
 * (SQLite's `data_version`, one cheap read, since SQLite tells no other process).
 */

const LOOK_EVERY_MS = 250;
/** Notifications can be lost with their connection: read anyway now and then. */
const BACKSTOP_MS = 30_000;

export interface ChangeSource {
  onCommit(listener: () => void): () => void;
  changeVersion?: (() => number) | undefined;
}

export function waitForChange(source: ChangeSource, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const { changeVersion } = source;
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const unsubscribe = source.onCommit(done);
    signal.addEventListener("abort", done, { once: true });
    if (!changeVersion) {
      timer = setTimeout(done, BACKSTOP_MS);
      return;
    }
    // A version that cannot be read (the database went away) ends the wait: the caller's next
    // read reports why.
    const read = (): number | undefined => {
      try {
        return changeVersion();
      } catch {
        return undefined;
      }
    };
    const seen = read();
    const look = () => {
      const now = read();
      if (now === undefined || now !== seen) done();
      else timer = setTimeout(look, LOOK_EVERY_MS);
    };
    timer = setTimeout(look, LOOK_EVERY_MS);
  });
}
