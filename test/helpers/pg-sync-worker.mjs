// The worker thread behind test/helpers/pg-sync.ts: one pg pool per database URL, kept for the
// life of the test file. Each request is answered on the port, then the waiting thread is woken.
import { parentPort, workerData } from "node:worker_threads";
import pg from "pg";

const { port, flag } = workerData;
const pools = new Map();

function poolFor(url) {
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 1, options: "-c TimeZone=UTC" });
    // A test dropping its database ends the pool's connection: the next query reconnects.
    pool.on("error", () => {});
    pools.set(url, pool);
  }
  return pool;
}

async function handle(request) {
  if (request.close !== undefined) {
    const pool = pools.get(request.close);
    pools.delete(request.close);
    await pool?.end();
    return { rows: null };
  }
  const result = await poolFor(request.url).query(request.sql, request.params);
  return { rows: result.rows[0]?.rows ?? "[]" };
}

parentPort.on("message", (request) => {
  handle(request)
    .then(
      (reply) => port.postMessage(reply),
      (error) => port.postMessage({ error: error.message, code: error.code }),
    )
    .finally(() => {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    });
});
