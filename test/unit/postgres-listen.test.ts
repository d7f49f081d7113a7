/**
 * The PostgreSQL change listener says when its LISTEN is in place (the feed's waiters read again
 * then: a commit between a waiter's read and that moment notified no one), and wakes on each
 * notification.
 */
import { EventEmitter } from "node:events";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { createChangeListener } from "../../src/store/postgres/listen.js";
import { createNaming } from "../../src/store/postgres/open.js";

/** A connection whose LISTEN answers when `listened()` is called. */
function fakeClient() {
  const emitter = new EventEmitter();
  const queries: string[] = [];
  let listened!: () => void;
  const client = Object.assign(emitter, {
    connect: async () => {},
    query: (sql: string) => {
      queries.push(sql);
      return new Promise<void>((resolve) => {
        listened = resolve;
      });
    },
    end: async () => {},
  });
  return { client: client as unknown as pg.Client, queries, listened: () => listened() };
}

describe("the PostgreSQL change listener", () => {
  it("says when its LISTEN is in place, and wakes on each notification after", async () => {
    const fake = fakeClient();
    const listener = createChangeListener({
      connect: () => fake.client,
      log: silentLogger(),
      naming: createNaming("postgres://db.example/mirror", "SYNCMIRROR_DATABASE_URL"),
    });
    let wakes = 0;
    let listening = 0;
    listener.ensure(
      () => wakes++,
      () => listening++,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(fake.queries).toEqual(["LISTEN syncmirror_changes"]);
    expect(listening, "not before the LISTEN is answered").toBe(0);

    fake.listened();
    await new Promise((resolve) => setImmediate(resolve));
    expect([listening, wakes]).toEqual([1, 0]);
    (fake.client as unknown as EventEmitter).emit("notification", { channel: "syncmirror_changes" });
    expect([listening, wakes]).toEqual([1, 1]);
    await listener.close();
  });
});
