/**
 * Fencing between replicas on one PostgreSQL database (docs/scaling-out.md, docs/scaling-out.md#fencing): a replica
 * paused (SIGSTOP) in the middle of a pass, past its lease, is replaced by another that finishes
 * its trigger; thawed (SIGCONT), it commits nothing more, whether the mirror has moved on since or
 * a new holder is in the middle of a pass, and even when both print as the same `hostname:pid`.
 * The replica that took over shows it in its log (at warn), its metrics and `status`.
 */
import { hostname } from "node:os";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, type DaemonProcess, spawnCli, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { contentHashes, mirrorRows, nodePid, pidOneWrapper, setDefaults } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const EVERY_TWO_SECONDS = "*/2 * * * * *";
const EXPORT = "GET /sync-task/{sync_id}/export";
const TRIGGER = "POST /sync-task";
const LEASE_SECONDS = 2;
const ERROR = 50;

let h: Harness | undefined;
const processes: CliProcess[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop("SIGKILL");
  await h?.close();
  h = undefined;
});

interface Paused<P extends CliProcess> {
  h: Harness;
  a: P;
  /** Its node process (what SIGSTOP and SIGCONT go to). */
  aPid: number;
  /** The trigger row the paused process was ingesting. */
  trigger: number;
  frozenAt: number;
}

/**
 * Process A (a replica, or a one-shot `sync`) starts a full pass of 300 documents in pages of 20,
 * slowed down upstream, and is paused once it committed two pages, with pages fetched ahead still
 * to apply.
 */
async function pauseMidPass<P extends CliProcess>(
  start: (h: Harness) => Promise<P>,
  options: { wrap?: readonly string[] | null; whileHeld?: (a: P) => Promise<void> } = {},
): Promise<Paused<P>> {
  const wrap = options.wrap ?? null;
  const harness = await createHarness({
    dialect: "postgres",
    sim: { docs: 300, users: 1 },
    export: { page_size: 20 },
  });
  h = harness;
  setDefaults(
    harness,
    { incremental_cron: EVERY_TWO_SECONDS, full_cron: NEVER },
    { lease_seconds: LEASE_SECONDS },
  );
  harness.sim.faults.inject(EXPORT, { kind: "delay", ms: 600, times: Number.POSITIVE_INFINITY });
  const a = await start(harness);
  processes.push(a);
  const migrated = () =>
    harness.query("SELECT 1 WHERE to_regclass('triggers') IS NOT NULL AND to_regclass('runs') IS NOT NULL");
  await until(() => migrated().length === 1, "the database to be migrated");
  const trigger = await until(
    () =>
      harness.query<{ id: number }>(
        "SELECT t.id FROM triggers t JOIN runs r ON r.trigger_row_id = t.id WHERE r.upserted >= 40 AND r.ingest <> 'done'",
      )[0]?.id,
    "a pass that committed two pages and has more to come",
    30_000,
  );
  await options.whileHeld?.(a);
  const aPid = nodePid(a, wrap !== null);
  process.kill(aPid, "SIGSTOP");
  const frozenAt = Date.now();
  harness.sim.faults.clear();
  // The processes started from here on run no schedule of their own.
  setDefaults(harness, { incremental_cron: NEVER });
  return { h: harness, a, aPid, trigger, frozenAt };
}

const replica = (wrap: readonly string[] | null) => (h: Harness) => startDaemon(h, {}, wrap ? { wrap } : {});

/** Replica B resumes the paused trigger once A's lease expired, and finishes it. */
async function takeOver({ h, trigger, frozenAt }: Paused<CliProcess>): Promise<DaemonProcess> {
  const b = await startDaemon(h);
  processes.push(b);
  await until(
    () => h.query("SELECT 1 FROM triggers WHERE id = ? AND state = 'done'", trigger).length === 1,
    "the paused replica's trigger finished by the other",
    60_000,
  );
  // The ticks A coalesced while its pass ran left a pass due, which B runs next: wait for it too, so
  // that what the test does next (edits, a pass of its own) meets a mirror nobody is running.
  await until(
    async () =>
      h.query("SELECT 1 FROM schedules WHERE mirror = 'main' AND due_mode IS NOT NULL").length === 0 &&
      h.query("SELECT 1 FROM triggers WHERE state <> 'done'").length === 0 &&
      (await b.metric("syncmirror_mirror_held", { mirror: "main" })) === 0,
    "the other replica to run what was due and let the mirror go",
    60_000,
  );
  const resumed = b.logs().find((l) => l.msg === "resuming the trigger left in flight");
  const takeover = b.logs().find((l) => typeof l.dead_holder === "string");
  console.info(
    `takeover (lease_seconds ${LEASE_SECONDS}): trigger resumed ${Date.parse(String(resumed?.time)) - frozenAt} ms after SIGSTOP; orphaned_seconds logged: ${takeover?.orphaned_seconds}`,
  );
  return b;
}

/** Every document edited upstream: the next incremental brings new content for every key. */
function editEverything(h: Harness): void {
  for (const doc of h.sim.docs.list()) h.sim.docs.edit(doc.docId);
}

/** Edits upstream, ingested by the next incremental (a one-shot sync): every key's content changes. */
async function ingestEdits(h: Harness): Promise<void> {
  const preEdit = contentHashes(h);
  editEverything(h);
  const next = await h.cli(["sync"]);
  expect(next.code, `${next.stdout}${next.stderr}`).toBe(0);
  const postEdit = contentHashes(h);
  expect([...preEdit].filter(([key, hash]) => postEdit.get(key) === hash)).toEqual([]);
}

/** What settling the trigger wrote on its row. */
const triggerRow = (h: Harness, id: number) =>
  h.query("SELECT finished_at, outcome, message FROM triggers WHERE id = ?", id);

/**
 * How the thawed replica's stale pass ended, from its lines since `from`: its lease loss, or any
 * other end (a pass that settled and logged its outcome, or failed).
 */
function fateOfStalePass(a: DaemonProcess, from: number): Record<string, unknown> | undefined {
  return a
    .logs()
    .slice(from)
    .find((l) => "outcome" in l || (Number(l.level) >= ERROR && /lease|pass failed/.test(String(l.msg))));
}

const LEASE_LOST = /the lease on mirror main \(epoch 1\) is no longer this process's/;

describe.skipIf(!available)("fencing a paused replica on PostgreSQL", () => {
  it("commits nothing once thawed after another replica took over, finished its trigger and ingested edits", async () => {
    const paused = await pauseMidPass(replica(null), {
      whileHeld: async (a) => expect(await a.metric("syncmirror_mirror_held", { mirror: "main" })).toBe(1),
    });
    const { h, a, aPid } = paused;
    const aName = `${hostname()}:${aPid}`;
    const aInstance = String(a.logs().find((l) => l.msg === "daemon started")?.instance_id);
    const status = await h.cli(["status"]);
    expect(status.stdout, "plain status names the paused holder").toContain(
      `held by:                  ${aName} (instance ${aInstance}), lease epoch 1 until `,
    );

    const b = await takeOver(paused);
    const takeover = b.logs().find((l) => typeof l.dead_holder === "string");
    expect(takeover, "the takeover is logged at warn").toMatchObject({
      level: 40,
      mirror: "main",
      dead_holder: aName,
      dead_instance_id: aInstance,
      dead_epoch: 1,
      epoch: 2,
    });
    expect(Number(takeover?.orphaned_seconds)).toBeGreaterThanOrEqual(LEASE_SECONDS);
    expect(await b.metric("syncmirror_lease_takeovers_total", { mirror: "main" })).toBe(1);
    await until(
      async () => (await b.metric("syncmirror_mirror_held", { mirror: "main" })) === 0,
      "the replica that took over to let the lease go once its pass ended",
    );

    const finishedByB = triggerRow(h, paused.trigger);
    await ingestEdits(h);
    const before = mirrorRows(h);

    const from = a.logs().length;
    process.kill(aPid, "SIGCONT");
    const fate = await until(
      () => fateOfStalePass(a, from),
      "the thawed replica's stale pass to end",
      30_000,
    );
    expect(fate, "the thawed replica stops its pass at error").toMatchObject({
      level: ERROR,
      mirror: "main",
      epoch: 1,
    });
    expect(String(fate.msg)).toMatch(LEASE_LOST);
    expect(mirrorRows(h), "no resource went back to its pre-edit content; the feed is as it was").toEqual(
      before,
    );
    expect(triggerRow(h, paused.trigger), "the finished trigger's row was not rewritten").toEqual(
      finishedByB,
    );
    // Its schedule goes on: it may hold the lease again for a pass of its own, but took none over.
    expect(await a.metric("syncmirror_lease_takeovers_total", { mirror: "main" })).toBe(0);
  });

  it("commits nothing once thawed while a holder that prints as the same hostname:pid is mid-pass", async () => {
    const wrap = pidOneWrapper();
    if (!wrap) console.info("unprivileged pid namespaces unavailable: the replicas print as different pids");
    const paused = await pauseMidPass(replica(wrap), { wrap });
    const { h, aPid } = paused;
    await takeOver(paused);
    const preEdit = contentHashes(h);
    editEverything(h);

    // The next pass (a one-shot sync, pid 1 too) is held up upstream once it committed six pages.
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 200, times: Number.POSITIVE_INFINITY });
    const c = spawnCli(["sync", "--config", h.configPath], h.env, wrap ? { wrap } : {});
    processes.push(c);
    const changed = () => [...contentHashes(h)].filter(([key, hash]) => preEdit.get(key) !== hash);
    await until(() => changed().length >= 120, "the new holder to commit six pages of edits", 30_000);
    // Its next pages wait upstream until the thawed replica has met its fate.
    h.sim.faults.clear();
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 4_000, times: Number.POSITIVE_INFINITY });
    const committed = new Map(changed());
    expect(committed.size, "the new holder is mid-pass").toBeLessThan(preEdit.size);

    const from = paused.a.logs().length;
    process.kill(aPid, "SIGCONT");
    const reverted = () => {
      const now = contentHashes(h);
      return [...committed.keys()].filter((key) => now.get(key) === preEdit.get(key));
    };
    await until(
      () => fateOfStalePass(paused.a, from) ?? (reverted().length > 0 && "reverted"),
      "the thawed replica's stale pass to end, or a key to go back to its pre-edit content",
      20_000,
    );
    expect(reverted(), "no key the new holder committed went back to its pre-edit content").toEqual([]);
    const fate = fateOfStalePass(paused.a, from);
    expect(fate, "the thawed replica stops its pass at error").toMatchObject({ level: ERROR, epoch: 1 });
    expect(String(fate?.msg)).toMatch(LEASE_LOST);

    h.sim.faults.clear();
    const exit = await c.exited;
    expect(exit.code, `${c.stdout()}\n${c.stderr()}`).toBe(0);
    expect([...contentHashes(h)].filter(([key, hash]) => preEdit.get(key) === hash)).toEqual([]);
  });

  it("sends no trigger POST once thawed from a pause in its 429 wait, after another replica resumed the trigger", async () => {
    const harness = await createHarness({ dialect: "postgres", sim: { docs: 40, users: 1 } });
    h = harness;
    setDefaults(harness, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: LEASE_SECONDS });
    // The service refuses the first trigger before doing anything: the replica waits, then posts again.
    harness.sim.faults.inject(TRIGGER, { kind: "429", retryAfterSeconds: 3, times: 1 });
    const a = await startDaemon(harness);
    processes.push(a);
    // Ready, it is alive on the database: the pass asked for is left to it, not run by `trigger`.
    await until(async () => (await a.get("/readyz")).status === 200, "the replica ready");
    expect((await harness.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(
      () => a.logs().some((l) => l.route === "/sync-task" && l.status === "429"),
      "the replica to be waiting to post its refused trigger again",
    );
    const aPid = nodePid(a, false);
    process.kill(aPid, "SIGSTOP");
    expect(triggerPosts(harness), "paused inside its wait, before posting again").toBe(1);

    const b = await startDaemon(harness);
    processes.push(b);
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the paused replica's trigger resumed and finished by the other",
      60_000,
    );
    expect(b.logs().some((l) => l.msg === "resuming the trigger left in flight")).toBe(true);
    expect(triggerPosts(harness), "the other replica posted the trigger once").toBe(2);

    // Writes to the leases wait on this lock, the thawed replica's renewal among them, while reads
    // go on: it cannot learn of the takeover from its renewal, only from a look before posting again.
    const locker = new pg.Client({ connectionString: harness.databaseUrl });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE leases IN SHARE MODE");
      const from = a.logs().length;
      process.kill(aPid, "SIGCONT");
      const fate = await until(
        () => (triggerPosts(harness) > 2 ? "posted again" : fateOfStalePass(a, from)),
        "the thawed replica to post again or to stop its pass",
      );
      expect(triggerPosts(harness), "no second trigger of the mirror from the thawed replica").toBe(2);
      expect(fate, "the thawed replica stops its pass at error").toMatchObject({ level: ERROR, epoch: 1 });
      expect(String((fate as Record<string, unknown>).msg)).toMatch(LEASE_LOST);
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
  });

  it("stops a one-shot sync paused past its lease: exit 1, nothing committed after the takeover", async () => {
    const paused = await pauseMidPass(async (h) =>
      spawnCli(["sync", "--config", h.configPath], { ...h.env, LOG_LEVEL: "info" }),
    );
    const { h, a, aPid } = paused;
    await takeOver(paused);
    const finishedByB = triggerRow(h, paused.trigger);
    await ingestEdits(h);
    const before = mirrorRows(h);

    process.kill(aPid, "SIGCONT");
    const exit = await a.exited;
    expect(exit.code, "the paused sync says its pass stopped").toBe(1);
    expect(a.stderr()).toMatch(LEASE_LOST);
    expect(mirrorRows(h), "no resource went back to its pre-edit content; the feed is as it was").toEqual(
      before,
    );
    expect(triggerRow(h, paused.trigger), "the finished trigger's row was not rewritten").toEqual(
      finishedByB,
    );
  });
});
