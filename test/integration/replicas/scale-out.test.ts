/**
 * Scale-out on PostgreSQL as an operator sees it from outside (SPEC "Scale-out (PostgreSQL)"):
 * replicas that start together on an empty database migrate it once; a one-shot `sync` beside a
 * daemon mid-pass meets the holder shown by every `status`; NOTIFY payloads after committed
 * pages; a killed replica whose pid nobody here can judge is replaced within the lease; a replica
 * paused while waiting on its runs writes nothing once thawed; a database URL's password, even
 * percent-encoded, never shows.
 */
import { hostname } from "node:os";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, type DaemonProcess, spawnCli, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, DATABASE_URL_ENV, type Harness } from "../../helpers/mirror-harness.js";
import { createTestDatabase, postgresForTests, type TestDatabase } from "../../helpers/postgres.js";
import {
  instanceId,
  nodePid,
  pidOneWrapper,
  rowsAPassWrites,
  setDefaults,
  useMirrors,
} from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { buildOnce, NEVER, twoTimesSoon } from "../daemon/setup.js";

const available = await postgresForTests();
const LEASE_SECONDS = 2;
/** Longer than the lease, for the replica whose heartbeat must not wait on its polls. */
const POLL_SECONDS = 3;

const harnesses: Harness[] = [];
const processes: CliProcess[] = [];
const databases: TestDatabase[] = [];
const clients: pg.Client[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop("SIGKILL");
  for (const c of clients.splice(0)) await c.end().catch(() => {});
  for (const h of harnesses.splice(0)) await h.close();
  for (const d of databases.splice(0)) await d.drop();
});

async function harness(options: Parameters<typeof createHarness>[0] = {}): Promise<Harness> {
  const h = await createHarness({ dialect: "postgres", ...options });
  harnesses.push(h);
  setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: LEASE_SECONDS });
  return h;
}

/**
 * A replica once ready: alive on the database from then on, so a `trigger` sent next leaves its
 * pass to the replicas rather than run it itself.
 */
async function replica(h: Harness, options: { wrap?: readonly string[] } = {}): Promise<DaemonProcess> {
  const d = await startDaemon(h, {}, options);
  processes.push(d);
  await until(async () => (await d.get("/readyz")).status === 200, "the replica ready", 30_000);
  return d;
}

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

interface MirrorStatus {
  mirror: string;
  holder: string | null;
  holder_instance_id: string | null;
  lease_epoch: number | null;
  last_outcome: string | null;
}

/** A mirror in a replica's /status, or undefined while the replica is not ready. */
async function mirrorStatus(d: DaemonProcess, name = "main"): Promise<MirrorStatus | undefined> {
  const { status, body } = await d.get("/status");
  if (status === 503) return undefined;
  return (JSON.parse(body) as { mirrors: MirrorStatus[] }).mirrors.find((m) => m.mirror === name);
}

/**
 * Holds the simulator's runs unfinished, so the pass triggered now waits on them holding its lease,
 * and resolves once `d`'s /status shows it in flight under a holder.
 */
async function passWaitingOnRuns(h: Harness, d: DaemonProcess): Promise<void> {
  h.sim.runs.hold();
  expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
  await until(async () => {
    const { body } = await d.get("/status");
    const main = JSON.parse(body).mirrors[0] as MirrorStatus & { in_flight: unknown };
    // In flight (recorded) a moment before its POST reaches the service: wait for both.
    return main.in_flight !== null && main.holder !== null && triggerPosts(h) > 0;
  }, "a pass in flight under a holder, its trigger posted");
}

describe.skipIf(!available)("scale-out on PostgreSQL, from outside", () => {
  it("three replicas started together on an empty database migrate it once, all ready, one POST per trigger", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const empty = await createTestDatabase({ empty: true });
    databases.push(empty);
    h.env[DATABASE_URL_ENV] = empty.url;
    const started = await Promise.all([replica(h), replica(h), replica(h)]);
    for (const d of started)
      await until(async () => (await d.get("/readyz")).status === 200, "every replica ready", 30_000);
    const db = await client(empty.url);
    const applied = (await db.query<{ hash: string }>("SELECT hash FROM drizzle.__drizzle_migrations")).rows;
    expect(new Set(applied.map((r) => r.hash)).size, "no migration applied twice").toBe(applied.length);
    expect(started.every((d) => d.stderr().includes('"level":50') === false)).toBe(true);

    expect((await h.cli(["trigger", "--mirror", "main"], { [DATABASE_URL_ENV]: empty.url })).code).toBe(0);
    await until(
      async () => (await mirrorStatus(started[2] as DaemonProcess))?.last_outcome === "succeeded",
      "the triggered pass to succeed, seen by every replica",
      30_000,
    );
    expect(triggerPosts(h), "one trigger POST for one trigger").toBe(1);
    const ran = started.filter((d) => d.logs().some((l) => l.msg === "triggered"));
    expect(ran, "the pass ran on exactly one replica").toHaveLength(1);
  });

  it("a one-shot sync beside a daemon mid-pass exits 1 naming the holder every status shows; a trigger meanwhile runs once after", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const [a, b] = [await replica(h), await replica(h)];
    await passWaitingOnRuns(h, a);
    // The service saw the POST before the runner's log line about it may have been read.
    const runner = await until(
      () => [a, b].find((d) => d?.logs().some((l) => l.msg === "triggered")),
      "the runner's log line saying it triggered",
    );
    const idle = runner === a ? (b as DaemonProcess) : a;
    const holderName = `${hostname()}:${runner.child.pid}`;

    const cli = JSON.parse((await h.cli(["status", "--json"])).stdout).mirrors[0] as MirrorStatus;
    for (const seen of [cli, await mirrorStatus(runner), await mirrorStatus(idle)])
      expect(seen, "status --json and both replicas' /status show who runs the mirror").toMatchObject({
        holder: holderName,
        holder_instance_id: instanceId(runner),
        lease_epoch: expect.any(Number),
      });
    expect(await runner.metric("syncmirror_mirror_held", { mirror: "main" })).toBe(1);
    expect(await idle.metric("syncmirror_mirror_held", { mirror: "main" })).toBe(0);

    const beside = await h.cli(["sync", "--json"]);
    expect(beside.code, beside.stderr).toBe(1);
    const summary = JSON.parse(beside.stdout) as { mirrors: { outcome: string; message: string }[] };
    expect(summary.mirrors[0]?.outcome).toBe("failed");
    expect(summary.mirrors[0]?.message).toContain(holderName);
    expect(triggerPosts(h), "the sync beside it sent no trigger").toBe(1);

    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    h.sim.runs.release();
    await until(() => triggerPosts(h) === 2, "the pass asked for meanwhile to run after the first", 30_000);
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 2,
      "both passes done",
      30_000,
    );
    for (const d of [a, b])
      await until(
        async () => (await mirrorStatus(d))?.holder === null,
        "nobody holding the mirror once its passes ended",
      );
    const after = await h.cli(["sync"]);
    expect(after.code, after.stderr).toBe(0);
    expect(triggerPosts(h)).toBe(3);
  });

  it("sends NOTIFY syncmirror_changes '<mirror>:<last seq>' after committed pages, matching the changes table", async () => {
    const h = await harness({ sim: { docs: 60, users: 1 }, export: { page_size: 20 } });
    const mirrors = useMirrors(h, 2);
    const listener = await client(h.databaseUrl as string);
    const payloads: string[] = [];
    listener.on("notification", (n) => {
      if (n.channel === "syncmirror_changes") payloads.push(String(n.payload));
    });
    await listener.query("LISTEN syncmirror_changes");
    const d = await replica(h);
    for (const m of mirrors) expect((await h.cli(["trigger", "--mirror", m])).code).toBe(0);
    await until(
      async () =>
        (JSON.parse((await d.get("/status")).body) as { mirrors: MirrorStatus[] }).mirrors.every(
          (m) => m.last_outcome === "succeeded",
        ),
      "both mirrors' passes to succeed",
      30_000,
    );
    const seqs = h.query<{ seq: number }>("SELECT seq FROM changes ORDER BY seq").map((r) => Number(r.seq));
    expect(seqs.length).toBeGreaterThan(0);
    await until(() => payloads.some((p) => p.endsWith(`:${seqs.at(-1)}`)), "the last change's notification");

    for (const p of payloads) expect(p).toMatch(/^(m1|m2):\d+$/);
    const notified = payloads.map((p) => Number(p.split(":")[1]));
    expect(
      notified.filter((s) => !seqs.includes(s)),
      "every notified seq is a committed change",
    ).toEqual([]);
    for (const m of mirrors) {
      const own = payloads.filter((p) => p.startsWith(`${m}:`)).map((p) => Number(p.split(":")[1]));
      expect(own.length, `${m}: one notification per page that recorded changes`).toBeGreaterThanOrEqual(3);
      expect(
        [...own].sort((x, y) => x - y),
        `${m}: seqs only grow`,
      ).toEqual(own);
    }
    expect(Math.max(...notified)).toBe(seqs.at(-1));
  });

  it("resumes the trigger of a replica killed with kill -9 whose pid this host cannot judge, within lease + one poll, with no second POST", async () => {
    const wrap = pidOneWrapper();
    if (!wrap) {
      console.info("unprivileged pid namespaces unavailable: the lease-expiry path is not reached here");
      return;
    }
    const h = await harness({ sim: { docs: 20 } });
    const doomed = await replica(h, { wrap });
    await passWaitingOnRuns(h, doomed);
    const survivor = await replica(h);
    await until(() => survivor.logs().some((l) => l.msg === "daemon started"), "the survivor started");
    process.kill(nodePid(doomed, true), "SIGKILL");
    await doomed.exited;
    const killedAt = Date.now();
    h.sim.runs.release();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the killed replica's trigger finished by the survivor",
      60_000,
    );
    const resumed = survivor.logs().find((l) => l.msg === "resuming the trigger left in flight");
    expect(resumed, survivor.stderr()).toBeDefined();
    console.info(
      `lease expiry (lease_seconds ${LEASE_SECONDS}): resumed ${Date.parse(String(resumed?.time)) - killedAt} ms after kill -9`,
    );
    expect(triggerPosts(h), "no second trigger POST").toBe(1);
    expect(await survivor.metric("syncmirror_lease_takeovers_total", { mirror: "main" })).toBe(1);
  });

  it("a replica paused while waiting on its runs writes nothing once thawed after another took over and finished", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const a = await replica(h);
    await passWaitingOnRuns(h, a);
    const aPid = a.child.pid as number;
    process.kill(aPid, "SIGSTOP");
    const b = await replica(h);
    await until(
      async () => (await mirrorStatus(b))?.holder_instance_id === instanceId(b),
      "the other replica to take the expired lease over",
      60_000,
    );
    h.sim.runs.release();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the paused replica's trigger finished by the other",
      60_000,
    );
    await until(async () => (await mirrorStatus(b))?.holder === null, "the lease let go once the pass ended");
    const before = rowsAPassWrites(h);
    expect(before.resources?.length).toBeGreaterThan(0);

    const from = a.logs().length;
    process.kill(aPid, "SIGCONT");
    await until(
      () =>
        a
          .logs()
          .slice(from)
          .some((l) => l.code === "LEASE_LOST" || /lease/.test(String(l.msg))),
      "the thawed replica to find its lease gone",
      30_000,
    );
    await until(
      async () => (await a.metric("syncmirror_mirror_held", { mirror: "main" })) === 0,
      "the thawed replica to stop holding the mirror",
    );
    expect(rowsAPassWrites(h), "nothing the thawed replica did landed").toEqual(before);
    expect(triggerPosts(h), "no trigger POST from the thawed replica").toBe(1);
    expect(await b.metric("syncmirror_lease_takeovers_total", { mirror: "main" })).toBe(1);
  });

  it("never shows a database password, percent-encoded or not, in logs, output or endpoints", async () => {
    const h = await harness({ sim: { docs: 10 } });
    const password = "p@ss:w/rd%Zq9#x";
    const url = new URL(h.databaseUrl as string);
    url.password = encodeURIComponent(password);
    h.env[DATABASE_URL_ENV] = url.toString();
    const forms = [password, encodeURIComponent(password), "Zq9"];
    const d = await replica(h);
    await until(async () => (await d.get("/readyz")).status === 200, "the replica ready");
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(
      async () => (await mirrorStatus(d))?.last_outcome === "succeeded",
      "the pass to succeed",
      30_000,
    );
    const bodies = await Promise.all(["/status", "/metrics", "/readyz"].map((path) => d.get(path)));
    const missing = new URL(url);
    missing.pathname = "/syncmirror_no_such_database";
    const down = new URL(url);
    down.port = "1";
    const outputs = [
      await h.cli(["status", "--json"]),
      await h.cli(["sync", "--json"], { LOG_LEVEL: "debug" }),
      await h.cli(["check"]),
      await h.cli(["status"], { [DATABASE_URL_ENV]: missing.toString() }),
      await h.cli(["sync", "--json"], { [DATABASE_URL_ENV]: down.toString() }),
    ];
    expect(outputs.map((o) => o.code)).toEqual([0, 0, 0, 2, 1]);
    const stopped = await d.stop("SIGTERM");
    expect(stopped.code).toBe(0);
    const texts = [
      d.stderr(),
      d.stdout(),
      ...bodies.map((b) => b.body),
      ...outputs.flatMap((o) => [o.stdout, o.stderr]),
    ];
    for (const text of texts) for (const form of forms) expect(text).not.toContain(form);
  });

  it("sends NOTIFY for the delete changes a full pass's sweep commits", async () => {
    const h = await harness({ sim: { docs: 30, users: 1 } });
    const first = await h.cli(["sync", "--full"]);
    expect(first.code, first.stderr).toBe(0);
    const listener = await client(h.databaseUrl as string);
    const payloads: string[] = [];
    listener.on("notification", (n) => payloads.push(String(n.payload)));
    await listener.query("LISTEN syncmirror_changes");
    const d = await replica(h);
    await until(async () => (await d.get("/readyz")).status === 200, "the replica ready");
    for (const doc of h.sim.docs.list().slice(0, 3)) h.sim.docs.remove(doc.docId);
    const before = Number(h.query<{ seq: number }>("SELECT max(seq) AS seq FROM changes")[0]?.seq);
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(
      () => h.query("SELECT 1 FROM changes WHERE op = 'delete'").length === 3,
      "the sweep to delete the three removed documents",
      30_000,
    );
    const last = Number(h.query<{ seq: number }>("SELECT max(seq) AS seq FROM changes")[0]?.seq);
    expect(last).toBeGreaterThan(before);
    await until(
      () => payloads.includes(`main:${last}`),
      `NOTIFY main:${last} for the sweep's deletes`,
      10_000,
    );
  });

  it("keeps a live replica's lease through a pass longer than lease_seconds: no takeover, one POST", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const a = await replica(h);
    await passWaitingOnRuns(h, a);
    const b = await replica(h);
    await until(async () => (await b.get("/readyz")).status === 200, "the second replica ready");
    const first = (await mirrorStatus(b)) as MirrorStatus & { lease_expires_at: string };
    const renewedPast = Date.parse(first.lease_expires_at) + LEASE_SECONDS * 1000;
    // Renewed to expire a whole lease after the first expiry: that first expiry has gone by.
    const later = await until(
      async () => {
        const m = (await mirrorStatus(b)) as MirrorStatus & { lease_expires_at: string | null };
        return m.lease_expires_at !== null && Date.parse(m.lease_expires_at) > renewedPast && m;
      },
      "the lease renewed past its first expiry",
      30_000,
    );
    expect(later).toMatchObject({ holder_instance_id: instanceId(a), lease_epoch: first.lease_epoch });
    h.sim.runs.release();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the pass done",
      30_000,
    );
    expect(triggerPosts(h)).toBe(1);
    expect(await b.metric("syncmirror_lease_takeovers_total", { mirror: "main" })).toBe(0);
    expect(b.logs().some((l) => l.msg === "resuming the trigger left in flight")).toBe(false);
  });

  it("shows a one-shot sync as the holder, and a replica resumes its trigger once the sync is killed, with no second POST", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const d = await replica(h);
    await until(async () => (await d.get("/readyz")).status === 200, "the replica ready");
    h.sim.runs.hold();
    const sync = spawnCli(["sync", "--config", h.configPath], h.env);
    processes.push(sync);
    const seen = await until(async () => {
      const m = (await mirrorStatus(d)) as (MirrorStatus & { in_flight: unknown }) | undefined;
      // The trigger is in flight (recorded) a moment before its POST reaches the service.
      return m?.holder && m.in_flight !== null && triggerPosts(h) > 0 ? m : undefined;
    }, "the one-shot sync's trigger in flight and posted");
    expect(seen.holder).toBe(`${hostname()}:${sync.child.pid}`);
    expect(triggerPosts(h)).toBe(1);
    sync.child.kill("SIGKILL");
    await sync.exited;
    h.sim.runs.release();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the killed sync's trigger finished by the replica",
      60_000,
    );
    expect(d.logs().some((l) => l.msg === "resuming the trigger left in flight")).toBe(true);
    expect(triggerPosts(h), "no second trigger POST").toBe(1);
    expect((await mirrorStatus(d))?.last_outcome).toBe("succeeded");
  });

  it("runs a full_cron time that fell while no replica ran once, not once per replica starting together", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const before = await replica(h);
    await until(async () => (await before.get("/readyz")).status === 200, "the first replica ready");
    await until(() => before.logs().some((l) => l.msg === "daemon started"), "its first look recorded");
    expect((await before.stop("SIGTERM")).code).toBe(0);
    // Set once no replica runs, so both times fall while nobody is there to see them.
    const soon = twoTimesSoon();
    setDefaults(h, { full_cron: soon.cron });
    await until(() => Date.now() > soon.last.getTime() + 200, "both full_cron times to pass", 20_000);
    expect(triggerPosts(h)).toBe(0);

    const started = await Promise.all([replica(h), replica(h), replica(h)]);
    for (const d of started)
      await until(() => d.logs().some((l) => l.msg === "daemon started"), "every replica's first look");
    await until(
      async () => (await mirrorStatus(started[0] as DaemonProcess))?.last_outcome === "succeeded",
      "the caught-up full pass",
      30_000,
    );
    const status = JSON.parse((await h.cli(["status", "--json"])).stdout).mirrors[0];
    expect(status.due, "nothing more due").toBeNull();
    expect(triggerPosts(h), "one catch-up pass among three replicas").toBe(1);
    expect(h.sim.runs.list().every((r) => r.since === null)).toBe(true);
  });

  it("keeps a replica alive in /status, and `trigger` leaves the pass to it, with a lease shorter than its poll interval", async () => {
    const h = await harness({ sim: { docs: 20 } });
    setDefaults(h, { poll_initial_seconds: POLL_SECONDS, poll_max_seconds: POLL_SECONDS });
    const d = await replica(h);
    await until(() => d.logs().some((l) => l.msg === "daemon started"), "the replica started");
    const startedAt = Date.now();
    const gone: number[] = [];
    // Watched over more than one poll interval: the replica must be listed at every look.
    await until(async () => {
      const replicas = JSON.parse((await d.get("/status")).body).replicas as unknown[];
      if (replicas.length === 0) gone.push(Date.now() - startedAt);
      return Date.now() - startedAt > (POLL_SECONDS + 1) * 1000;
    }, "one poll interval and more to pass");
    expect(gone, "moments /status listed no live replica").toEqual([]);
    const asked = await h.cli(["trigger", "--mirror", "main"]);
    expect(asked.code, asked.stderr).toBe(0);
    await until(
      () => d.logs().some((l) => l.msg === "triggered"),
      "the replica to run the pass asked for",
      30_000,
    );
  });
});
