/**
 * docs/reference/metrics.md counts what the mirror did, once: a transaction that rolls back and is run again
 * (a page read again by the next pass, or any transaction another writer got in the way of) is
 * counted and logged when it commits, never once per attempt.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createLogger, type Logger } from "../../../src/log.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { counters, createTwins, type Twins } from "../../helpers/twins.js";

let h: Harness | undefined;
let twins: Twins | undefined;
afterEach(async () => {
  await h?.close();
  await twins?.close();
  h = undefined;
  twins = undefined;
});

const counted = async (harness: Harness, name: string) =>
  ((await harness.metrics.registry.getSingleMetric(name)?.get())?.values ?? []).reduce(
    (n, v) => n + v.value,
    0,
  );

describe("row counters", () => {
  it("count a page that rolled back and was read again once", async () => {
    h = await createHarness({ sim: { users: 1, docs: 1200 }, maxAttempts: 1 });
    let rows = 0;
    const failMidSecondPage = (point: string) => {
      if (point === "mid-page" && ++rows === 600) throw new Error("the page transaction failed");
    };

    const first = await h.sync({}, { crashPoint: failMidSecondPage });
    expect(first.outcome).toBe("partial");
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBe(500);
    expect(await counted(h, "syncmirror_resources_upserted_total")).toBe(500);

    const second = await h.sync();
    expect(second.outcome).toBe("succeeded");
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBe(1200);
    expect(await counted(h, "syncmirror_resources_upserted_total")).toBe(1200);
  });
});

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];
const RETRIED = "transaction rolled back: another writer got in the way; running it again";

/** A logger at debug whose JSON lines are kept. */
function capturedLog(): { log: Logger; lines: () => { level: number; msg: string }[] } {
  const written: string[] = [];
  const log = createLogger({ level: "debug" }, { write: (line: string) => void written.push(line) });
  return { log, lines: () => written.map((line) => JSON.parse(line)) };
}

/**
 * Upstream, before the full pass: a resource whose title the mirror must repair (a warning from
 * inside the page), a key one user loses and a key everybody loses (revoked, deleted), every
 * notion document removed (each pair's sweep held by the mass-delete guard), a user who leaves.
 */
function changeUpstream(harness: Harness): void {
  const { sim } = harness;
  const serverOf = (type: string) =>
    sim.servers.find((s) => s.source_type === type)?.server_instance_id ?? "";
  const [notion, github] = [serverOf("notion"), serverOf("github")];
  sim.docs.add({ server_instance_id: github, visibleTo: [U1], title: "lone \ud800 surrogate" });
  const [shared, gone] = pickDocs(
    harness,
    2,
    (d) => d.server_instance_id === github && d.visibleTo.includes(U1) && d.visibleTo.includes(U2),
  );
  if (!shared || !gone) throw new Error("no two github documents both users see");
  sim.docs.setVisibility(
    shared.docId,
    shared.visibleTo.filter((u) => u !== U1),
  );
  sim.docs.setVisibility(gone.docId, []);
  for (const d of pickDocs(harness, 0, (d) => d.server_instance_id === notion)) sim.docs.remove(d.docId);
  sim.people.leaveProject(U3);
}

describe("a transaction run again", () => {
  it("counts and logs once what it did, however often it ran", async () => {
    twins = await createTwins({ sim: { docs: 80 } });
    const { clean, hurt } = twins;
    hurt.env.SYNCMIRROR_RETRY_EACH_TRANSACTION = "1";
    const logs = { clean: capturedLog(), hurt: capturedLog() };
    for (const [twin, { log }] of [
      [clean, logs.clean],
      [hurt, logs.hurt],
    ] as const) {
      expect((await twin.sync({}, { log })).outcome).toBe("succeeded");
      changeUpstream(twin);
      expect((await twin.sync({ full: true }, { log })).outcome).toBe("partial");
    }

    // Every transaction of the hurt twin ran twice; the clean twin's once.
    const retried = (lines: { msg: string }[]) => lines.filter((l) => l.msg === RETRIED).length;
    expect(retried(logs.hurt.lines())).toBeGreaterThan(10);
    expect(retried(logs.clean.lines())).toBe(0);

    const cleanCounters = await counters(clean);
    expect(await counters(hurt)).toEqual(cleanCounters);
    for (const name of [
      "syncmirror_access_revoked_total",
      "syncmirror_resources_deleted_total",
      "syncmirror_sweeps_held_total",
      "syncmirror_resources_upserted_total",
      "syncmirror_runs_total",
      "syncmirror_sources_total",
    ])
      expect(await counted(clean, name), name).toBeGreaterThan(0);

    // API requests are not the transactions' doing: how many polls a pass makes depends on timing.
    const said = (lines: { level: number; msg: string }[]) =>
      lines
        .filter((l) => l.msg !== RETRIED && l.msg !== "api request")
        .map((l) => `${l.level} ${l.msg}`)
        .sort();
    const cleanLines = said(logs.clean.lines());
    expect(said(logs.hurt.lines())).toEqual(cleanLines);
    for (const line of [
      /sweep held by the mass-delete guard/,
      /unpaired UTF-16 surrogates/,
      /pair lost its access/,
    ])
      expect(
        cleanLines.some((l) => line.test(l)),
        String(line),
      ).toBe(true);
  });
});
