/**
 * A database that goes away while `syncmirror run` is still starting, after it opened the
 * database (docs/operations.md#http-endpoints-and-probes): the daemon stays up, not ready, and finishes
 * starting once the database answers again, rather than exiting and leaving its passes to a
 * supervisor's restart loop. PostgreSQL only: the network to a SQLite file cannot be cut.
 */
import { describe, expect, it } from "vitest";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { callDaemon, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, DATABASE_URL_ENV } from "../../helpers/mirror-harness.js";
import { startCuttableProxy, startHoldingProxy } from "../../helpers/tcp-proxy.js";
import { daemonSuite, NEVER, setCrons } from "./setup.js";

const suite = daemonSuite();

describe.skipIf(!onPostgres)("the database cut off while the daemon starts", () => {
  it("keeps the daemon up and not ready; once the database answers it is ready and runs passes", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 5 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    expect((await h.sync()).outcome).toBe("succeeded");
    const cuttable = await startCuttableProxy(h.databaseUrl as string);
    // The start-up's check that no two mirrors share a sync config, which runs after the database opened.
    const holding = await startHoldingProxy(cuttable.url, 'from "managed_sync_configs" order by');
    try {
      const d = await suite.daemon(h, { env: { [DATABASE_URL_ENV]: holding.url }, ready: false });
      await until(() => holding.holding(), "the daemon starting, its statement held");
      await cuttable.cut();
      await until(async () => (await callDaemon(d, "/readyz")).status === 503, "/readyz 503 while cut off");
      expect((await callDaemon(d, "/healthz")).status).toBe(200);

      await cuttable.restore();
      await until(async () => (await callDaemon(d, "/readyz")).status === 200, "/readyz 200 again", 30_000);
      await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
      const trigger = await callDaemon(d, "/v1/mirrors/main/trigger", {
        method: "POST",
        authorization: `Bearer ${HTTP_TOKEN}`,
        body: JSON.stringify({ mode: "incremental" }),
      });
      expect(trigger.status, trigger.text).toBe(200);
      await until(
        async () =>
          (await d.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })) >= 1,
        "the pass asked for, run",
      );
      expect(d.logs().filter((l) => (l.level as number) >= 50)).toEqual([]);
    } finally {
      await holding.close();
      await cuttable.close();
    }
  });
});
