/**
 * Replicas on one host (issue 22, item 4): one config file, one PostgreSQL database, and each
 * replica's listen address from $SYNCMIRROR_HTTP_LISTEN. The config's own port is held by another
 * process here, so only the override can let them start.
 */
import { createServer, type Server } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig, NEVER } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";

let h: Harness | undefined;
const daemons: DaemonProcess[] = [];
const servers: Server[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop("SIGKILL");
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
  await h?.close();
  h = undefined;
});

/** A port held open by this process for the test's length, or (`keep: false`) a free one. */
async function port(keep: boolean): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: p } = server.address() as { port: number };
  if (keep) servers.push(server);
  else await new Promise((resolve) => server.close(resolve));
  return p;
}

describe.skipIf(!available)("replicas on one host", () => {
  it("starts two daemons of one config on the ports $SYNCMIRROR_HTTP_LISTEN names, both ready", async () => {
    h = await createHarness({ dialect: "postgres", defaults: { incremental_cron: NEVER, full_cron: NEVER } });
    const taken = await port(true);
    editConfig(h, (config) => {
      config.http = { listen: `127.0.0.1:${taken}` };
    });
    const [a, b] = [await port(false), await port(false)];
    for (const p of [a, b]) {
      const d = await startDaemon(h, { SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${p}` });
      daemons.push(d);
      expect(d.port).toBe(p);
    }
    for (const d of daemons)
      await until(async () => (await d.get("/readyz")).status === 200, `/readyz on ${d.port}`);

    const plain = await h.cli(["run"]);
    expect(plain.code, "without the variable the config's port, in use, is refused").toBe(2);
    expect(plain.stderr).toContain(
      `cannot listen on 127.0.0.1:${taken} (http.listen): the port is already in use`,
    );
    const clash = await h.cli(["run"], { SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${a}` });
    expect(clash.code).toBe(2);
    expect(clash.stderr).toContain(
      `cannot listen on 127.0.0.1:${a} ($SYNCMIRROR_HTTP_LISTEN): the port is already in use`,
    );
    const bad = await h.cli(["run"], { SYNCMIRROR_HTTP_LISTEN: "localhost" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('http.listen: $SYNCMIRROR_HTTP_LISTEN, which overrides it, is "localhost"');
  });
});
