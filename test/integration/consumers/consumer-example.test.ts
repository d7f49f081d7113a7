/**
 * The consumer examples of docs/consumers.md (examples/): following /v1/changes from a saved seq (either
 * dialect), and reading the SQLite file directly (SQLite only), both end with an index equal to
 * the database's live state after a run of edits, deletes and access changes; a consumer
 * replaying from seq 0 gets the same.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { catchUp, type State } from "../../../examples/follow-changes.js";
import { catchUpFromFile } from "../../../examples/read-sqlite.js";
import { configureConsumers, HTTP_TOKEN, liveState } from "../../helpers/consumers.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];
const ROOT = join(import.meta.dirname, "..", "..", "..");
const onSqlite = TEST_DIALECT === "sqlite";

/** Serves the database over HTTP just long enough for the HTTP consumer to catch up. */
async function catchUpOverHttp(h: Harness, state: State): Promise<State> {
  const d = await suite.daemon(h);
  try {
    return await catchUp(`http://127.0.0.1:${d.port}`, HTTP_TOKEN, state);
  } finally {
    await d.stop("SIGTERM");
  }
}

/** Edits, an upstream delete, a revoked and a granted access, a leaver and a new document. */
async function churn(h: Harness): Promise<void> {
  const [edited, removed, narrowed, widened] = pickDocs(h, 4, (d) => d.visibleTo.includes(U1));
  h.sim.clock.advance(60_000);
  h.sim.docs.edit(edited?.docId as string, { title: "Edited title" });
  h.sim.docs.remove(removed?.docId as string);
  h.sim.docs.setVisibility(narrowed?.docId as string, [U2]);
  h.sim.docs.setVisibility(widened?.docId as string, [U1, U2, U3]);
  const server = h.sim.servers[0]?.server_instance_id as string;
  h.sim.docs.add({ server_instance_id: server, visibleTo: [U3], title: "Brand new" });
  await h.sync();
  h.sim.people.leaveProject(U3);
  await h.sync({ full: true });
}

describe("the consumer examples", () => {
  it("keep an index equal to the live state, resuming from a saved seq over HTTP and from the file", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 30 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    await h.sync();
    let http = await catchUpOverHttp(h, { after: 0, index: {} });
    expect(http.index).toEqual(liveState(h));
    // The file reader is the SQLite example; on PostgreSQL only the HTTP consumer runs.
    let file = onSqlite ? catchUpFromFile(h.dbPath, { after: 0, index: {} }) : http;
    expect(file).toEqual(http);

    await churn(h);
    const ops = h.query<{ op: string }>(
      "SELECT DISTINCT op FROM changes WHERE seq > ? ORDER BY op",
      http.after,
    );
    expect(ops.map((o) => o.op)).toEqual(["access", "delete", "upsert"]);
    http = await catchUpOverHttp(h, http);
    if (onSqlite) file = catchUpFromFile(h.dbPath, file);
    const live = liveState(h);
    expect(http.index).toEqual(live);
    if (onSqlite) expect(file.index).toEqual(live);
    expect(Object.values(live).some((e) => e.title === "Edited title")).toBe(true);
    expect(await catchUpOverHttp(h, { after: 0, index: {} })).toEqual(http);
  });

  it.runIf(onSqlite)("runs as a script (the SQLite file reader)", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 10 } }));
    await h.sync();
    const run = spawnSync(join(ROOT, "node_modules", ".bin", "tsx"), ["examples/read-sqlite.ts", h.dbPath], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      `seq ${catchUpFromFile(h.dbPath, { after: 0, index: {} }).after}: ${Object.keys(liveState(h)).length} documents\n`,
    );
  });
});
