/**
 * docs/reference/cli.md, docs/reference/sync-semantics.md#outcomes through the built CLI (`npm run build` first):
 * `sync --json`, exit codes, `--full --dry-run`, refusals.
 */
import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { snapshot } from "../../helpers/db-snapshot.js";
import { accessRows, pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";

describe("sync --json", () => {
  it("prints one summary object and exits 0 when every mirror succeeded", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    const { code, stdout, stderr } = await h.cli(["sync", "--json"]);
    expect(code, stderr).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.mirrors).toHaveLength(1);
    expect(out.mirrors[0]).toMatchObject({
      mirror: "main",
      mode: "full",
      trigger_id: expect.any(String),
      since: null,
      runs: { completed: h.sim.users.length },
      sources: { ok: expect.any(Number) },
      counts: { upserted: expect.any(Number), deleted: 0, access_revoked: 0, held_revocations: 0 },
      skipped: {},
      outcome: "succeeded",
      message: expect.any(String),
    });
  });

  it("prints the summary and exits 1 when a mirror was partial", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    h.sim.setOutcome({ user: U1 }, { task: "FAILED" });
    const { code, stdout, stderr } = await h.cli(["sync", "--json"]);
    expect(code, stderr).toBe(1);
    expect(JSON.parse(stdout).mirrors[0]).toMatchObject({ outcome: "partial", runs: { failed: 1 } });
  });

  it("runs a mirror named twice once: one trigger, one summary", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    const { code, stdout, stderr } = await h.cli(["sync", "--mirror", "main", "--mirror", "main", "--json"]);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout).mirrors.map((m: { mirror: string }) => m.mirror)).toEqual(["main"]);
    expect(h.sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-task")).toHaveLength(1);
  });

  it("exits 2 for an unknown mirror name and for --dry-run without --full", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    const unknown = await h.cli(["sync", "--mirror", "nope", "--json"]);
    expect(unknown).toMatchObject({ code: 2, stdout: "" });
    expect(unknown.stderr).toMatch(/no mirror named "nope"/);
    const dryRunAlone = await h.cli(["sync", "--dry-run"]);
    expect(dryRunAlone.code, dryRunAlone.stderr).toBe(2);
    expect(dryRunAlone.stderr).toMatch(/--dry-run needs --full/);
    expect(h.sim.requests).toEqual([]);
  });

  it("exits 2 for a bad config, naming the file and key but never a token value", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    writeFileSync(
      h.configPath,
      `api:\n  base_url: ${h.sim.baseUrl}\n  token: s3cr3t-token-value\nmirrors:\n  - name: Bad Name\n    sync_config_id: x\n`,
    );
    const { code, stderr } = await h.cli(["sync", "--json"]);
    expect(code).toBe(2);
    expect(stderr).toContain(h.configPath);
    expect(stderr).toContain("api.token");
    expect(stderr).not.toContain("s3cr3t-token-value");
    expect(h.sim.requests).toEqual([]);
  });
});

/** After a first sync, one shared document is removed upstream and another is hidden from user1. */
async function removeOneNarrowOne() {
  h = await createHarness({ sim: { docs: 20 } });
  await h.sync();
  const removed = pickDoc(h, (d) => d.visibleTo.length >= 2);
  const narrowed = pickDoc(
    h,
    (d) => d.key !== removed.key && d.visibleTo.includes(U1) && d.visibleTo.length >= 2,
  );
  h.sim.docs.remove(removed.docId);
  h.sim.docs.setVisibility(
    narrowed.docId,
    narrowed.visibleTo.filter((u) => u !== U1),
  );
  return { removed, narrowed };
}

describe("sync --full --dry-run", () => {
  it("prints what the sweep would revoke and delete and writes nothing", async () => {
    const { removed } = await removeOneNarrowOne();
    const before = snapshot(h);
    const wouldRevoke = removed.visibleTo.length + 1;

    const text = await h.cli(["sync", "--full", "--dry-run"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      `the sweep would revoke ${wouldRevoke} access row(s) and delete 1 resource(s); nothing was written`,
    );
    const json = await h.cli(["sync", "--full", "--dry-run", "--json"]);
    expect(JSON.parse(json.stdout).mirrors[0].dry_run).toMatchObject({
      would_revoke: wouldRevoke,
      would_delete: 1,
    });
    expect(snapshot(h)).toEqual(before);
    const history = await h.cli(["history", "--json", "--limit", "1"]);
    expect(JSON.parse(history.stdout).passes[0]).toMatchObject({ mode: "full", dry_run: true });

    // The real sweep then does what the dry run said.
    const real = await h.sync({ full: true });
    expect(real.counts).toMatchObject({ access_revoked: wouldRevoke, deleted: 1 });
  });
});

describe("sync --full --dry-run lists", () => {
  it("names the key it would delete and the access rows it would revoke, in --json and the table", async () => {
    const { removed, narrowed } = await removeOneNarrowOne();
    const revoke = [
      ...accessRows(h, removed.key).map((a) => ({ user_email: a.user_email, key: removed.key })),
      { user_email: U1, key: narrowed.key },
    ].sort((a, b) => (`${a.user_email}\n${a.key}` < `${b.user_email}\n${b.key}` ? -1 : 1));
    expect(revoke.length).toBeGreaterThanOrEqual(3);

    const json = await h.cli(["sync", "--full", "--dry-run", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).mirrors[0].dry_run).toEqual({
      would_revoke: revoke.length,
      would_delete: 1,
      revoke,
      revoke_truncated: false,
      delete: [removed.key],
      delete_truncated: false,
      held_sweeps: [],
    });

    const text = await h.cli(["sync", "--full", "--dry-run"]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split("\n");
    const after = lines.slice(lines.findIndex((l) => l.includes("nothing was written")) + 1);
    expect(after.join("\n")).toBe(
      [
        "  keys to delete (1):",
        `    ${removed.key}`,
        `  access to revoke (user, key) (${revoke.length}):`,
        ...revoke.map((r) => `    ${r.user_email}  ${r.key}`),
        "",
      ].join("\n"),
    );
    expect(text.stdout).not.toMatch(/and \d+ more/);
  });
});

describe("refusals", () => {
  it("is refused while the premium feature is off, and triggers normally once it is on", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    h.sim.setPremium(false);
    const refused = await h.sync();
    expect(refused.outcome).toBe("refused");
    expect(refused.message).toMatch(/Premium Features/);
    expect((await h.cli(["sync"])).code).toBe(1);
    // Nothing is left in flight: the next pass triggers afresh.
    expect(h.query("SELECT state, outcome FROM triggers")).toEqual([
      { state: "done", outcome: "refused" },
      { state: "done", outcome: "refused" },
    ]);

    h.sim.setPremium(true);
    expect((await h.sync()).outcome).toBe("succeeded");
  });

  it("is refused when the service answers 409 cannot start, with its reason", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    h.sim.setCannotStart("Another sync of this config is still running.");
    const refused = await h.sync();
    // No answer, so no skipped list: unknown, as the pass's history entry says too.
    expect(refused).toMatchObject({ outcome: "refused", trigger_id: null, skipped_total: null });
    expect(refused.message).toMatch(/Another sync of this config is still running/);
    const history = JSON.parse((await h.cli(["history", "--json"])).stdout);
    expect(history.passes[0]).toMatchObject({ outcome: "refused", skipped_total: null });
    expect(h.sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-task")).toHaveLength(1);

    h.sim.setCannotStart(null);
    expect((await h.sync()).outcome).toBe("succeeded");
  });
});
