/**
 * Several mirrors whose sync configs share servers and users, so the same keys arrive through
 * each: what `sync --full --dry-run` predicts and writes.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";

// biome-ignore lint/suspicious/noExplicitAny: the printed summary is read loosely, shapes are asserted
type Json = any;

/** Mirrors `one` (a config of U1 only) and `all` (every user), over every server, both synced once. */
async function twoMirrors(): Promise<void> {
  h = await createHarness({ sim: { docs: 30 } });
  const onlyU1 = h.sim.configs.create({ name: "only-u1", userEmails: [U1] });
  editConfig(h, (config) => {
    config.mirrors = [
      { name: "one", sync_config_id: onlyU1 },
      { name: "all", sync_config_id: h.sim.syncConfigId },
    ];
  });
  expect((await sync()).code).toBe(0);
}

async function sync(...args: string[]): Promise<{ code: number | null; out: Json; of: (m: string) => Json }> {
  const r = await h.cli(["sync", "--json", ...args]);
  expect(r.stdout, r.stderr).not.toBe("");
  const out = JSON.parse(r.stdout);
  return { code: r.code, out, of: (m) => out.mirrors.find((s: Json) => s.mirror === m) };
}

/** Every public table, the pairs and the dry run's scratch rows, to compare before and after. */
function tables(): unknown {
  return {
    scratch: h.query(
      "SELECT (SELECT count(*) FROM dry_run_seen) AS seen, (SELECT count(*) FROM dry_run_revoke) AS revoke",
    ),
    resources: h.query("SELECT * FROM resources ORDER BY key"),
    access: h.query("SELECT * FROM resource_access ORDER BY mirror, user_email, key"),
    changes: h.query("SELECT * FROM changes ORDER BY seq"),
    pairs: h.query("SELECT * FROM pairs ORDER BY mirror, user_email, server_instance_id"),
  };
}

describe("sync --full --dry-run over several mirrors", () => {
  it("predicts the delete the real sync --full makes in the last mirror's sweep, and writes nothing", async () => {
    await twoMirrors();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    h.sim.docs.remove(doc.docId);
    const before = tables();

    const dry = await sync("--full", "--dry-run");
    expect(dry.code).toBe(0);
    expect(tables()).toEqual(before);

    const real = await sync("--full");
    expect(real.code).toBe(0);
    const deleted = ["one", "all"].map((m) => real.of(m).counts.deleted);
    expect(deleted).toEqual([0, 1]);
    expect(["one", "all"].map((m) => dry.of(m).dry_run.delete)).toEqual([[], [doc.key]]);
  });
});
