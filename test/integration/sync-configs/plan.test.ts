/**
 * `planSyncConfigs` in-process, against the simulator over HTTP and a store in memory, for what a
 * database written by earlier applies decides: whose a config of the declared name is, and a
 * declaration whose project changed; and `applyEntry` on a rename alone, which waits for a pass in
 * flight and owes a full pass like any other change.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { createApiClient } from "../../../src/api/client.js";
import { type Config, parseConfig } from "../../../src/config.js";
import { silentLogger } from "../../../src/log.js";
import type { Simulator } from "../../../src/simulator/index.js";
import { openEmptyStore } from "../../../src/store/open-store.js";
import type { Store } from "../../../src/store/store.js";
import { applyEntry } from "../../../src/sync-configs/apply.js";
import { planSyncConfigs } from "../../../src/sync-configs/plan.js";
import { startTestSimulator } from "../../helpers/simulator.js";

async function setup() {
  const { sim } = await startTestSimulator({ users: 2 });
  const api = createApiClient({
    baseUrl: sim.baseUrl,
    token: sim.token,
    timeoutMs: 5000,
    maxAttempts: 1,
    retriedBy: "operator",
    log: silentLogger(),
  });
  const store = await openEmptyStore();
  onTestFinished(async () => {
    await api.close();
    await store.close();
  });
  return { sim, api, store, plan: (config: Config) => planSyncConfigs(config, { api, store }) };
}

function config(sim: Simulator, mirror: string): Config {
  const text = `api:\n  base_url: ${sim.baseUrl}\nmirrors:\n  - name: ${mirror}\n    sync_config:\n      name: Wiki\n      instructions: Collect the wiki.\n      servers: [Team Wiki]\n      all_users: true\n`;
  return parseConfig("cfg.yaml", text, {});
}

async function recordCreated(store: Store, mirror: string, id: string, projectId: string) {
  await store.syncConfigs.recordApplied(mirror, {
    syncConfigId: id,
    projectId,
    name: "Wiki",
    origin: "created",
    adoptedAt: null,
    appliedHash: "sha256:old",
    at: new Date().toISOString(),
    fullOwed: false,
  });
}

describe("plan: whose is a remote config", () => {
  it("lets a mirror renamed in the file take over the config syncmirror created for its old name", async () => {
    const { sim, api, store, plan } = await setup();
    const id = sim.configs.create({
      name: "Wiki",
      instructions: "Collect the wiki.",
      serverIds: [sim.servers[0]?.server_instance_id ?? ""],
    });
    await recordCreated(store, "wiki-old", id, sim.projectId);
    const [entry] = await plan(config(sim, "wiki-new"));
    expect(entry).toMatchObject({
      mirror: "wiki-new",
      action: "none",
      needs: null,
      syncConfigId: id,
      takenFrom: "wiki-old",
    });
    const done = await applyEntry(
      entry as NonNullable<typeof entry>,
      { api, store, now: () => new Date() },
      { adopt: false, prune: false },
    );
    expect(done).toMatchObject({ done: "unchanged", syncConfigId: id });
    expect(await store.syncConfigs.find("wiki-old")).toBeUndefined();
    expect(await store.syncConfigs.find("wiki-new")).toMatchObject({ syncConfigId: id, origin: "created" });
  });

  it("takes a config of the declared name as its own after a create whose answer was never recorded", async () => {
    const { sim, store, plan } = await setup();
    await store.syncConfigs.recordCreating("wiki", {
      name: "Wiki",
      projectId: sim.projectId,
      at: new Date().toISOString(),
    });
    const id = sim.configs.create({
      name: "Wiki",
      instructions: "Collect the wiki.",
      serverIds: [sim.servers[0]?.server_instance_id ?? ""],
    });
    const [entry] = await plan(config(sim, "wiki"));
    expect(entry).toMatchObject({ action: "none", needs: null, syncConfigId: id });
    expect(entry?.notes).toContain("created by an apply whose answer was lost");
    await store.syncConfigs.recordError("wiki", {
      error: "400",
      at: new Date().toISOString(),
      createRefused: true,
    });
    expect((await plan(config(sim, "wiki")))[0]).toMatchObject({ action: "adopt", needs: "adopt" });
  });

  it("refuses to follow a declaration into another project, naming the key", async () => {
    const { sim, store, plan } = await setup();
    const id = sim.configs.create({ name: "Wiki" });
    await recordCreated(store, "wiki", id, "an-older-project");
    const [entry] = await plan(config(sim, "wiki"));
    expect(entry?.problem).toContain("mirrors[0].sync_config.project: sync config");
    expect(entry?.problem).toContain("cannot move between projects");
  });
});

describe("apply: a rename alone is a change like any other", () => {
  it("is refused under a trigger in flight, then applied between passes with a full pass owed", async () => {
    const { sim, api, store, plan } = await setup();
    const id = sim.configs.create({
      name: "Old wiki",
      instructions: "Collect the wiki.",
      serverIds: [sim.servers[0]?.server_instance_id ?? ""],
    });
    await recordCreated(store, "wiki", id, sim.projectId);
    await store.mirrors.ensure("wiki", id);
    const trigger = await store.triggers.createIntent({
      mirror: "wiki",
      mode: "incremental",
      since: null,
      knownBefore: null,
      intentAt: new Date().toISOString(),
      allowMassDelete: false,
      dryRun: false,
      startedBy: null,
      startedByName: null,
      dueAt: null,
      dueReason: null,
    });
    const applyIt = async () => {
      const [entry] = await plan(config(sim, "wiki"));
      expect(entry).toMatchObject({ action: "replace", changes: [{ field: "name", to: "Wiki" }] });
      return {
        entry,
        done: await applyEntry(
          entry as NonNullable<typeof entry>,
          { api, store, now: () => new Date() },
          { adopt: false, prune: false },
        ),
      };
    };

    const refused = await applyIt();
    expect(refused.entry?.notes).toContain("an incremental pass is in flight: apply refuses until it ends");
    expect(refused.done).toMatchObject({ done: "refused", fullOwed: false });
    expect(sim.configs.list().find((c) => c.id === id)?.name).toBe("Old wiki");

    await store.triggers.finish(trigger.id, {
      outcome: "succeeded",
      message: "",
      summary: null,
      finishedAt: new Date().toISOString(),
    });
    const applied = await applyIt();
    expect(applied.done).toMatchObject({ done: "replaced", fullOwed: true });
    expect(sim.configs.list().find((c) => c.id === id)?.name).toBe("Wiki");
    expect((await store.syncConfigs.find("wiki"))?.fullPendingAfter).not.toBeNull();
  });
});
