/**
 * The operator console across replicas on one PostgreSQL database (docs/console-history.md): an
 * `approve-sweep` given to one replica over HTTP is obeyed by the full pass another replica runs,
 * whose history entry names that replica and who approved, and a replica started afterwards shows
 * the same pass and no held sweep. Any replica with a free slot takes a due pass, so the first one
 * stops after approving: the full pass is certainly the other's.
 */
import { describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { accessOfSourceType, pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const EVERY_TWO_SECONDS = "*/2 * * * * *";

const suite = daemonSuite();
const replica = (harness: Harness) => suite.daemon(harness);

const authorized = { authorization: `Bearer ${HTTP_TOKEN}` };

describe.skipIf(!available)("the console across replicas", () => {
  it("has the full pass of one replica apply the sweep approved on another, and a third show it", async () => {
    const harness = suite.use(await createHarness({ dialect: "postgres", sim: { docs: 80 } }));
    configureConsumers(harness, { search: false });
    await harness.sync();
    const notion = harness.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of pickDocs(harness, 0, (d) => d.server_instance_id === notion))
      harness.sim.docs.remove(doc.docId);
    const held = await harness.sync({ full: true });
    // The approval and the revocations count access rows; held_revocations counts their keys.
    const heldBack = accessOfSourceType(harness, "notion");
    expect(heldBack.rows).toBeGreaterThan(heldBack.keys);
    expect(held.counts.held_revocations).toBe(heldBack.keys);

    setCrons(harness, { incremental_cron: NEVER, full_cron: NEVER });
    const a = await replica(harness);
    const heldGauge = () => a.metric("syncmirror_problems", { mirror: "main", kind: "held_sweep" });
    expect(await heldGauge()).toBe(harness.sim.users.length);
    const approved = await fetch(`http://127.0.0.1:${a.port}/v1/mirrors/main/approve-sweep`, {
      method: "POST",
      headers: authorized,
      body: JSON.stringify({ by: "ana" }),
    });
    expect(approved.status).toBe(200);
    expect((await a.stop()).code).toBe(0);

    setCrons(harness, { incremental_cron: NEVER, full_cron: EVERY_TWO_SECONDS });
    const b = await replica(harness);
    const started = await until(() => b.logs().find((l) => l.msg === "daemon started"), "b's start-up line");
    const appliedOn = (d: DaemonProcess) =>
      until(async () => {
        const res = await fetch(`http://127.0.0.1:${d.port}/v1/passes`, { headers: authorized });
        const { passes } = (await res.json()) as HistoryJson;
        return passes.find((p) => p.sweep_approval !== null && p.state === "done");
      }, "a full pass that took the approval");
    const applied = await appliedOn(b);
    expect(applied).toMatchObject({
      mode: "full",
      outcome: "succeeded",
      replica: { name: started.holder, instance_id: started.instance_id },
      counts: { revoked: heldBack.rows, held: 0 },
      sweep_approval: { up_to: heldBack.rows, used: heldBack.rows },
    });
    expect(applied.sweep_approval?.by).toBe("ana (http 127.0.0.1)");
    setCrons(harness, { incremental_cron: NEVER, full_cron: NEVER });
    const c = await replica(harness);
    expect(await appliedOn(c), "a third replica shows the same pass").toEqual(applied);
    expect(await c.metric("syncmirror_problems", { mirror: "main", kind: "held_sweep" })).toBe(0);
  });
});
