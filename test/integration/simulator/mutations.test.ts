import { describe, expect, it } from "vitest";
import { type Body, startTestSimulator, trigger } from "../../helpers/simulator.js";

async function exportByKey(api: Body, syncId: string): Promise<Map<string, Body>> {
  const { body } = await api.get(`/sync-task/${syncId}/export`, { limit: 500 });
  return new Map(body.resources.map((r: Body) => [r.key, r]));
}

describe("dataset mutations", () => {
  it("fixes what a source collects when it finishes: later edits, removals and visibility changes show only in later runs", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 20 });
    const [edited, removed, hidden] = sim.docs
      .list()
      .filter((d) => d.server_instance_id === sim.servers[0]?.server_instance_id);
    if (!edited || !removed || !hidden) throw new Error("seed too small");
    const first = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const before = await exportByKey(api, first);

    sim.clock.set(new Date("2026-02-01T10:00:00Z"));
    sim.docs.edit(edited.docId);
    sim.docs.remove(removed.docId);
    sim.docs.setVisibility(hidden.docId, []);
    expect(sim.docs.get(edited.docId)).toMatchObject({ version: 2, modifiedAt: "2026-02-01T10:00:00Z" });
    expect(sim.docs.get(removed.docId).deleted).toBe(true);

    const again = await exportByKey(api, first);
    expect(again.get(edited.key)?.content_hash).toBe(before.get(edited.key)?.content_hash);
    expect(again.has(removed.key)).toBe(true);

    const second = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const after = await exportByKey(api, second);
    expect(after.get(edited.key)?.content_hash).not.toBe(before.get(edited.key)?.content_hash);
    expect(after.get(edited.key)?.modified_at).toBe("2026-02-01T10:00:00Z");
    expect(after.has(removed.key)).toBe(false);
    expect(after.has(hidden.key)).toBe(false);
    expect(after.size).toBe(before.size - 2);
  });

  it("collects the version current when the source finishes, not when the run was triggered", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 10 });
    const doc = sim.docs.list()[0];
    if (!doc) throw new Error("no doc");
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.advance(syncId);
    sim.docs.edit(doc.docId, { content: "Rewritten while the agent was crawling." });
    sim.runs.finishAll();
    const resource = (await exportByKey(api, syncId)).get(doc.key);
    expect(resource?.content.text).toBe("Rewritten while the agent was crawling.");
  });

  it("adds documents with pinned title, content, fields and modified time, in key order", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 2, docs: 30 });
    const notion = sim.servers[0]?.server_instance_id ?? "";
    const docId = sim.docs.add({
      server_instance_id: notion,
      visibleTo: ["user2@example.com"],
      title: "Added page",
      content: "# Added page\n\nHello.",
      fields: { status: "Draft" },
      modifiedAt: "2026-01-04T00:00:00Z",
    });
    const noTime = sim.docs.add({
      server_instance_id: notion,
      visibleTo: ["user2@example.com"],
      modifiedAt: null,
      contentBytes: 20_000,
    });
    expect(sim.docs.get(docId)).toMatchObject({
      title: "Added page",
      visibleTo: ["user2@example.com"],
      modifiedAt: "2026-01-04T00:00:00Z",
    });
    expect(sim.docs.get(noTime).modifiedAt).toBeNull();
    const { runs } = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    const user1 = await exportByKey(api, runs[0].sync_id);
    const user2 = await exportByKey(api, runs[1].sync_id);
    const key = sim.docs.get(docId).key;
    expect(user1.has(key)).toBe(false);
    expect(user2.get(key)).toMatchObject({
      title: "Added page",
      content: { text: "# Added page\n\nHello." },
      content_status: "available",
      fields: { status: "Draft" },
      modified_at: "2026-01-04T00:00:00Z",
    });
    expect(user2.get(sim.docs.get(noTime).key)?.content.text.length).toBeGreaterThan(15_000);
    const keys = [...user2.keys()];
    expect(keys).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));

    const since = await trigger(api, sim.syncConfigId, { since: "2026-01-01T00:00:00Z" });
    sim.runs.finishAll();
    const incremental = await exportByKey(api, since.runs[1].sync_id);
    expect(incremental.has(key)).toBe(true);
    expect(incremental.has(sim.docs.get(noTime).key)).toBe(false);
  });

  it("rejects unknown documents, servers and users", async () => {
    const { sim } = await startTestSimulator();
    expect(() => sim.docs.get("doc-999999")).toThrow(/unknown document/);
    expect(() => sim.docs.edit("nope")).toThrow(/unknown document/);
    expect(() => sim.docs.add({ server_instance_id: "nope", visibleTo: [] })).toThrow(/unknown server/);
    expect(() => sim.docs.setVisibility("doc-0", ["stranger@example.com"])).toThrow(/unknown user/);
    sim.docs.remove("doc-0");
    expect(() => sim.docs.edit("doc-0")).toThrow(/deleted/);
  });

  it("exposes users, servers and project membership", async () => {
    const { sim } = await startTestSimulator({ users: 2, serversPerType: { notion: 2, google_docs: 1 } });
    expect(sim.users).toEqual(["user1@example.com", "user2@example.com"]);
    expect(sim.servers.map((s) => s.server_name)).toEqual(["Team Wiki", "Eng Docs", "Google Docs"]);
    sim.people.leaveProject("user2@example.com");
    expect(sim.people.list()).toEqual([
      { email: "user1@example.com", projectUser: true },
      { email: "user2@example.com", projectUser: false },
    ]);
    sim.people.joinProject("user2@example.com");
    expect(sim.people.list()[1]?.projectUser).toBe(true);
    expect(() => sim.people.setAuth("user1@example.com", "nope", "authenticated")).toThrow(/unknown server/);
  });

  it("moves the clock only forward by events, or as told", async () => {
    const { sim, api } = await startTestSimulator({ clock: { start: new Date("2026-05-01T00:00:00Z") } });
    expect(sim.clock.now().toISOString()).toBe("2026-05-01T00:00:00.000Z");
    sim.clock.advance(60_000);
    expect(sim.clock.now().toISOString()).toBe("2026-05-01T00:01:00.000Z");
    await trigger(api, sim.syncConfigId);
    expect(sim.clock.now().getTime()).toBeGreaterThan(Date.parse("2026-05-01T00:01:00Z"));
    const frozen = await startTestSimulator({
      clock: { start: new Date("2026-05-01T00:00:00Z"), stepMs: 0 },
    });
    await trigger(frozen.api, frozen.sim.syncConfigId);
    expect(frozen.sim.clock.now().toISOString()).toBe("2026-05-01T00:00:00.000Z");
  });
});

describe("configs API", () => {
  it("creates, reads, lists and removes configs programmatically with the API's validation", async () => {
    const { sim } = await startTestSimulator();
    const id = sim.configs.create({ name: "Mine", userEmails: ["user1@example.com"] });
    expect(sim.configs.get(id)).toMatchObject({
      name: "Mine",
      all_users: false,
      user_emails: ["user1@example.com"],
    });
    expect(sim.configs.list().map((c) => c.id)).toEqual([id, sim.syncConfigId]);
    expect(() => sim.configs.create({ name: "Mine" })).toThrow(/409/);
    expect(() => sim.configs.setServerAvailable(id, "nope", false)).toThrow();
    sim.configs.remove(id);
    expect(() => sim.configs.get(id)).toThrow(/404/);
  });
});
