/**
 * `plan` and `apply` against a service whose config list names each config only (`id`, `name`,
 * `created_at`): the list's item shape is not documented, only a read's is
 * (docs/reference/upstream-api.md). The configs a declaration is compared with are read one by one,
 * and only those: the list just finds them by name.
 */
import { describe, expect, it } from "vitest";
import { declaredSuite, remoteNamed, serverId, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { replaceSyncConfig } from "../../helpers/simulator.js";

const harness = declaredSuite();

function lightLists(h: Harness): void {
  h.sim.faults.inject("GET /sync-configs", { kind: "light-items", times: Infinity });
}

async function plan(h: Harness, code: number): Promise<{ mirrors: Record<string, unknown>[] }> {
  const r = await h.cli(["plan", "--json"]);
  expect(r.code, r.stderr).toBe(code);
  return JSON.parse(r.stdout);
}

async function apply(h: Harness, ...flags: string[]): Promise<void> {
  const r = await h.cli(["apply", ...flags]);
  expect(r.code, r.stderr).toBe(0);
}

/** The ids of the configs read one by one since `h.sim.requests` was last cleared. */
function configsRead(h: Harness): string[] {
  return h.sim.requests
    .filter((r) => r.method === "GET" && r.route === "/sync-configs/{id}")
    .map((r) => r.path.split("/").pop() ?? "");
}

describe("declared sync configs with list items that only name a config", () => {
  it("creates, shows no change when applied, a real one after an upstream edit, and follows a renamed mirror", async () => {
    const h = await harness();
    lightLists(h);
    expect((await plan(h, 3)).mirrors[0]).toMatchObject({ action: "create" });
    await apply(h);
    const created = remoteNamed(h.sim, "Wiki");
    expect((await plan(h, 0)).mirrors[0]).toMatchObject({ action: "none", changes: [] });

    await replaceSyncConfig(h.sim, created.id, {
      server_instance_ids: created.server_instance_ids,
      user_emails: ["user1@example.com"],
    });
    expect((await plan(h, 3)).mirrors[0]).toMatchObject({
      action: "replace",
      changes: [{ field: "users", add: ["user2@example.com"], remove: [] }],
    });
    await apply(h);
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com", "user2@example.com"]);

    // Renamed in the file, the mirror finds its config by name in the list: compared with its read.
    writeMirrors(h, { renamed: wiki() });
    h.sim.requests.length = 0;
    expect((await plan(h, 0)).mirrors[0]).toMatchObject({
      mirror: "renamed",
      action: "none",
      sync_config_id: created.id,
      changes: [],
    });
    expect(configsRead(h)).toEqual([created.id]);
  });

  it("adopts a foreign config, compared field by field with its read, and prunes", async () => {
    const h = await harness();
    const foreign = h.sim.configs.create({
      name: "Wiki",
      instructions: "Someone else's.",
      serverIds: [serverId(h.sim, "Team Wiki"), serverId(h.sim, "GitHub")],
      userEmails: ["user1@example.com", "user2@example.com"],
    });
    lightLists(h);
    h.sim.requests.length = 0;
    expect((await plan(h, 1)).mirrors[0]).toMatchObject({
      action: "adopt",
      needs: "adopt",
      sync_config_id: foreign,
      changes: [{ field: "instructions", from: "Someone else's.", to: "Collect the wiki." }],
    });
    expect(configsRead(h), "only the config of the declared name is read").toEqual([foreign]);
    await apply(h, "--adopt");
    expect(remoteNamed(h.sim, "Wiki")).toMatchObject({ id: foreign, instructions: "Collect the wiki." });

    writeMirrors(h, { main: wiki(), extra: wiki({ name: "Extra" }) });
    await apply(h);
    const extra = remoteNamed(h.sim, "Extra").id;

    writeMirrors(h, { other: h.sim.syncConfigId });
    expect((await plan(h, 0)).mirrors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ mirror: "main", action: "unmanaged", needs: "prune" }),
        expect.objectContaining({ mirror: "extra", action: "unmanaged", needs: "prune" }),
      ]),
    );
    await apply(h, "--prune");
    expect(() => h.sim.configs.get(extra)).toThrow(/404/);
    expect(h.sim.configs.get(foreign).name).toBe("Wiki");
  });
});
