/**
 * Synchronous reads of a PostgreSQL database for assertions, so `Harness.query` reads either
 * dialect with one synchronous signature (its callers poll it inside `until` conditions and
 * compare its rows directly). The queries run on a pg pool in a worker thread (one per test
 * file, one connection per database) while this thread blocks on an Atomics wait: about a
 * millisecond a query, where spawning `psql` cost 30 to 100 ms.
 */
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";

const TIMEOUT_MS = 60_000;

interface Bridge {
  call(request: Record<string, unknown>): unknown;
}

let bridge: Bridge | undefined;

function open(): Bridge {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(new URL("./pg-sync-worker.mjs", import.meta.url), {
    workerData: { port: port2, flag },
    transferList: [port2],
  });
  worker.unref();
  return {
    call(request) {
      Atomics.store(flag, 0, 0);
      worker.postMessage(request);
      if (Atomics.wait(flag, 0, 0, TIMEOUT_MS) === "timed-out")
        throw new Error(`a PostgreSQL assertion query took over ${TIMEOUT_MS} ms: ${String(request.sql)}`);
      const reply = receiveMessageOnPort(port1)?.message as
        | { rows: string | null; error?: undefined }
        | { error: string; code?: string };
      if (!reply) throw new Error("the PostgreSQL query worker answered nothing");
      if (reply.error !== undefined) throw new Error(`${reply.code ?? ""} ${reply.error}`.trim());
      return reply.rows;
    },
  };
}

/** The rows of `sql` (with `$n` parameters) as one JSON array text. */
export function queryJsonSync(url: string, sql: string, params: readonly unknown[]): string {
  bridge ??= open();
  return bridge.call({ url, sql, params }) as string;
}

/** Closes this file's connection to `url` (before the database is dropped). */
export function closeSync(url: string): void {
  bridge?.call({ close: url });
}
