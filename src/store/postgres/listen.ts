/**
 * Wake-ups from other processes' commits: a dedicated connection LISTENs on the channel every
 * transaction that records changes NOTIFYs (`changes.ts`), so a replica that did not run the pass
 * wakes its long polls too. Connected on the first subscription, kept until the store closes; a
 * lost connection is reopened and its listeners woken once, since a notification may have been
 * missed meanwhile (a waiter then reads again, which costs one query). Each LISTEN in place is
 * reported too: the feed's waiters read again then, since a commit before it notified no one.
 */
import type pg from "pg";
import type { Logger } from "../../log.js";
import { CHANGES_CHANNEL } from "./changes.js";
import type { Naming } from "./open.js";

const RECONNECT_MS = 1000;

export interface ChangeListener {
  /**
   * Starts listening if not yet; `wake` is called on every notification (and when a lost
   * connection may have missed some), `listening` once each LISTEN is in place.
   */
  ensure(wake: () => void, listening: () => void): void;
  close(): Promise<void>;
}

export function createChangeListener(o: {
  connect: () => pg.Client;
  log: Logger;
  naming: Naming;
}): ChangeListener {
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  let wake = () => {};
  let listening = () => {};

  const open = () => {
    if (closed || client) return;
    const c = o.connect();
    client = c;
    const lost = (error?: Error) => {
      if (client !== c) return;
      client = undefined;
      void c.end().catch(() => {});
      if (closed) return;
      o.log.warn(
        { err: error ? o.naming.redact(error.message) : "ended" },
        `${o.naming.database}: the change notification connection was lost; reconnecting`,
      );
      wake();
      retry = setTimeout(open, RECONNECT_MS);
      retry.unref();
    };
    c.on("error", lost);
    c.on("end", () => lost());
    c.on("notification", (n) => {
      if (n.channel === CHANGES_CHANNEL) wake();
    });
    c.connect()
      .then(() => c.query(`LISTEN ${CHANGES_CHANNEL}`))
      .then(() => {
        if (client === c) listening();
      })
      .catch((error: Error) => lost(error));
  };

  return {
    ensure(onNotified, onListening) {
      wake = onNotified;
      listening = onListening;
      open();
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
