/**
 * The API client's sync config calls against the simulator over real HTTP: each call, the typed
 * error of each refusal docs/reference/upstream-api.md documents, paging with a cursor, and the retry rules of calls that
 * are not idempotent (a create is never repeated once it may have reached the service).
 */
import { describe, expect, it } from "vitest";
import { type ApiClient, createApiClient } from "../../../src/api/client.js";
import type { SyncConfigFields } from "../../../src/api/sync-config-api.js";
import {
  BadRequestError,
  CreateOutcomeUnknownError,
  FeatureDisabledError,
  NameTakenError,
  NotFoundError,
} from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import type { Simulator } from "../../../src/simulator/index.js";
import { startTestSimulator } from "../../helpers/simulator.js";

async function setup(): Promise<{ sim: Simulator; api: ApiClient; fields: SyncConfigFields }> {
  const { sim } = await startTestSimulator({ users: 3 });
  const api = createApiClient({
    baseUrl: sim.baseUrl,
    token: sim.token,
    timeoutMs: 10_000,
    maxAttempts: 3,
    retriedBy: "operator",
    log: silentLogger(),
    backoff: { baseMs: 1, maxMs: 5 },
  });
  const fields: SyncConfigFields = {
    name: "Wiki",
    instructions: "Collect the wiki.",
    server_instance_ids: [sim.servers[0]?.server_instance_id ?? ""],
    all_users: false,
    user_emails: ["user1@example.com"],
  };
  return { sim, api, fields };
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describe("api client: sync configs", () => {
  it("creates, reads, replaces every field of, and deletes a config", async () => {
    const { sim, api, fields } = await setup();
    try {
      const created = await api.createSyncConfig({ project_id: sim.projectId, ...fields });
      expect(created).toMatchObject({ name: "Wiki", all_users: false, user_emails: ["user1@example.com"] });
      expect(await api.getSyncConfig(created.id)).toEqual(created);
      const github = sim.servers[1]?.server_instance_id ?? "";
      const replaced = await api.replaceSyncConfig(created.id, {
        ...fields,
        instructions: "Only issues.",
        server_instance_ids: [github],
        all_users: true,
        user_emails: [],
      });
      expect(replaced).toMatchObject({ instructions: "Only issues.", all_users: true, user_emails: [] });
      expect(replaced.servers.map((s) => s.server_instance_id)).toEqual([github]);
      expect(await api.deleteSyncConfig(created.id)).toBe(true);
      expect(await api.deleteSyncConfig(created.id)).toBe(false);
      expect(await caught(api.getSyncConfig(created.id))).toBeInstanceOf(NotFoundError);
    } finally {
      await api.close();
    }
  });

  it("lists every config of the project across pages, newest first", async () => {
    const { sim, api } = await setup();
    try {
      for (let i = 0; i < 120; i++) {
        sim.clock.advance(1000);
        sim.configs.create({ name: `Config ${i}` });
      }
      sim.requests.length = 0;
      const names: string[] = [];
      for await (const c of api.listSyncConfigs(sim.projectId)) names.push(c.name);
      expect(names).toHaveLength(121);
      expect(names.slice(0, 2)).toEqual(["Config 119", "Config 118"]);
      expect(names.at(-1)).toBe("All servers, all users");
      expect(sim.requests.filter((r) => r.method === "GET" && r.route === "/sync-configs")).toHaveLength(2);
    } finally {
      await api.close();
    }
  });

  it("types each refusal: 400 naming the user, 404 no project, 409 name taken, the premium switch", async () => {
    const { sim, api, fields } = await setup();
    try {
      sim.people.leaveProject("user2@example.com");
      const left = await caught(
        api.createSyncConfig({ project_id: sim.projectId, ...fields, user_emails: ["user2@example.com"] }),
      );
      expect(left).toBeInstanceOf(BadRequestError);
      expect(JSON.stringify((left as BadRequestError).detail)).toContain("user2@example.com");
      expect((left as BadRequestError).status).toBe(400);
      expect(await caught(api.createSyncConfig({ project_id: "no-such-project", ...fields }))).toBeInstanceOf(
        NotFoundError,
      );
      const taken = await caught(
        api.createSyncConfig({ project_id: sim.projectId, ...fields, name: "All servers, all users" }),
      );
      expect(taken).toBeInstanceOf(NameTakenError);
      expect((taken as NameTakenError).message).toContain("apply --adopt");
      const mine = await api.createSyncConfig({ project_id: sim.projectId, ...fields });
      expect(
        await caught(api.replaceSyncConfig(mine.id, { ...fields, name: "All servers, all users" })),
      ).toBeInstanceOf(NameTakenError);
      sim.setPremium(false);
      expect(await caught(api.replaceSyncConfig(mine.id, fields))).toBeInstanceOf(FeatureDisabledError);
      expect(await api.deleteSyncConfig(mine.id)).toBe(true);
    } finally {
      await api.close();
    }
  });

  it("retries a create refused before any work (429 with Retry-After, 503) and creates it once", async () => {
    const { sim, api, fields } = await setup();
    try {
      sim.faults.inject("POST /sync-configs", { kind: "429", retryAfterSeconds: 0 });
      sim.faults.inject("POST /sync-configs", { kind: "503" });
      await api.createSyncConfig({ project_id: sim.projectId, ...fields });
      expect(sim.configs.list().filter((c) => c.name === "Wiki")).toHaveLength(1);
      expect(
        sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-configs").map((r) => r.status),
      ).toEqual([429, 503, 201]);
    } finally {
      await api.close();
    }
  });

  it("never repeats a create whose answer was lost or may come from after the work (500)", async () => {
    const { sim, api, fields } = await setup();
    try {
      sim.faults.inject("POST /sync-configs", { kind: "drop-after" });
      expect(await caught(api.createSyncConfig({ project_id: sim.projectId, ...fields }))).toBeInstanceOf(
        CreateOutcomeUnknownError,
      );
      expect(sim.configs.list().filter((c) => c.name === "Wiki")).toHaveLength(1);
      sim.faults.inject("POST /sync-configs", { kind: "500" });
      const other = { project_id: sim.projectId, ...fields, name: "Other" };
      expect(await caught(api.createSyncConfig(other))).toBeInstanceOf(CreateOutcomeUnknownError);
      expect(sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-configs")).toHaveLength(2);
    } finally {
      await api.close();
    }
  });

  it("retries a replace on 5xx: it sends every field, so repeating it changes nothing more", async () => {
    const { sim, api, fields } = await setup();
    try {
      sim.faults.inject("PUT /sync-configs/{id}", { kind: "502", times: 2 });
      const replaced = await api.replaceSyncConfig(sim.syncConfigId, { ...fields, name: "Renamed" });
      expect(replaced.name).toBe("Renamed");
      expect(
        sim.requests
          .filter((r) => r.method === "PUT" && r.route === "/sync-configs/{id}")
          .map((r) => r.status),
      ).toEqual([502, 502, 200]);
    } finally {
      await api.close();
    }
  });
});
