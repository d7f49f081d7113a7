/**
 * Replicas on one host (issue 22, item 4): one config file, one PostgreSQL database, and each
 * replica's listen address from $SYNCMIRROR_HTTP_LISTEN. The config's own port is held by another
 * process here, so only the override can let them start. A replica killed here is taken over at
 * once, not when its lease expires; a live one in another pid namespace that prints as this host
 * is left alone.
 */
import { createServer, type Server } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { pidOneWrapper, setDefaults } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
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

  /** Leases that outlast the test: a takeover seen in it cannot be an expiry. */
  async function holding(): Promise<{ harness: Harness; holder: DaemonProcess; holderName: string }> {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: 600 });
    h.sim.runs.hold();
    const holder = await startDaemon(h, { SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${await port(false)}` });
    daemons.push(holder);
    await until(() => holder.logs().some((l) => l.msg === "daemon started"), "the first replica started");
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    const lease = await until(
      () =>
        harness.query<{ holder_name: string }>("SELECT holder_name FROM leases WHERE released_at IS NULL")[0],
      "the first replica's pass under its lease",
    );
    return { harness, holder, holderName: lease.holder_name };
  }

  it("resumes at once the trigger of a replica killed with kill -9 on this host, before its lease expires", async () => {
    const { harness, holder } = await holding();
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'active'").length === 1,
      "its trigger POSTed",
    );
    const survivor = await startDaemon(harness, { SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${await port(false)}` });
    daemons.push(survivor);
    await until(() => survivor.logs().some((l) => l.msg === "daemon started"), "the second replica started");
    holder.child.kill("SIGKILL");
    await holder.exited;
    const took = await until(
      () => survivor.logs().find((l) => String(l.msg).startsWith("took over the lease of mirror main")),
      "the survivor taking the lease over",
    );
    expect(String(took.msg)).toContain("whose process died on this host");
    await until(
      () => survivor.logs().some((l) => l.msg === "resuming the trigger left in flight"),
      "the trigger resumed",
    );
    harness.sim.runs.release();
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the pass done",
    );
    expect(triggerPosts(harness), "resumed, not POSTed again").toBe(1);
  });

  const wrap = pidOneWrapper();
  it.skipIf(wrap === null)(
    "leaves the live pass of a replica that prints as this host but runs in another pid namespace to it",
    async () => {
      const { harness, holderName } = await holding();
      // Its pid, looked up in its own namespace, names no process: only the namespace tells them apart.
      const other = await startDaemon(
        harness,
        { SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${await port(false)}` },
        { wrap: wrap as readonly string[] },
      );
      daemons.push(other);
      // Logged after its first look for work, which takes over any holder it judges dead.
      await until(() => other.logs().some((l) => l.msg === "daemon started"), "the other replica started");
      const status = JSON.parse((await other.get("/status")).body) as {
        mirrors: { holder: string | null }[];
      };
      expect(status.mirrors[0]?.holder, "the holder shown as alive").toBe(holderName);
      expect(other.logs().filter((l) => String(l.msg).startsWith("took over the lease"))).toEqual([]);
      expect(harness.query("SELECT holder_name, epoch FROM leases")).toEqual([
        { holder_name: holderName, epoch: 1 },
      ]);
      harness.sim.runs.release();
    },
  );
});
