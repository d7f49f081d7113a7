/** docs/reference/upstream-api.md#limits-and-retries: export pages of at most 500 (`export.page_size`), run-list pages of 100, several servers of one type. */
import { afterEach, describe, expect, it } from "vitest";
import type { RequestLogEntry } from "../../../src/simulator/index.js";
import { accessRows, countRows } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const isExport = (r: RequestLogEntry) => r.route === "/sync-task/{sync_id}/export";
const isRunList = (r: RequestLogEntry) => r.method === "GET" && r.route === "/sync-task";

describe("paging", () => {
  it.each([
    { name: "250 by default", exportSection: undefined, size: 250 },
    { name: "export.page_size, up to the service's 500", exportSection: { page_size: 500 }, size: 500 },
  ])("reads a 1,234-resource export in pages of $name", async ({ exportSection, size }) => {
    h = await createHarness({
      sim: { docs: 1234, users: 1, serversPerType: { notion: 1 } },
      ...(exportSection ? { export: exportSection } : {}),
    });
    const s = await h.sync();
    expect(s).toMatchObject({ outcome: "succeeded", counts: { upserted: 1234, unchanged: 0 } });
    const pages = h.sim.requests.filter(isExport);
    expect(pages.map((r) => [r.query.offset, r.query.limit, r.status])).toEqual(
      Array.from({ length: Math.ceil(1234 / size) }, (_, i) => [String(i * size), String(size), 200]),
    );
    expect(countRows(h, "resources")).toBe(1234);
    expect(visibleKeys(h, "user1@example.com")).toEqual(expectedKeys(h.sim, "user1@example.com"));
  });

  it("lists the runs of a 150-user trigger in pages of 100, one listing per poll round", async () => {
    h = await createHarness({ sim: { docs: 20, users: 150, serversPerType: { notion: 1 } } });
    const s = await h.sync();
    expect(s.outcome).toBe("succeeded");
    expect(s.runs).toEqual({ completed: 150 });

    const lists = h.sim.requests.filter(isRunList);
    expect(lists.length).toBeGreaterThan(0);
    for (const r of lists) {
      expect(r.query.trigger_id).toBe(s.trigger_id);
      expect(r.query.size).toBe("100");
    }
    // Each round is a first page (no cursor) followed by exactly one cursor page: 150 = 100 + 50.
    const rounds = lists.filter((r) => !r.query.cursor).length;
    expect(lists.filter((r) => r.query.cursor).length).toBe(rounds);
    lists.forEach((r, i) => {
      expect(Boolean(r.query.cursor)).toBe(i % 2 === 1);
    });
    expect(h.sim.requests.filter(isExport)).toHaveLength(150);
    for (const user of ["user1@example.com", "user75@example.com", "user150@example.com"])
      expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });
});

describe("several servers of one type", () => {
  it("mirrors two notion servers under their own source labels", async () => {
    h = await createHarness({ sim: { docs: 40, serversPerType: { notion: 2 } } });
    const s = await h.sync();
    expect(s.outcome).toBe("succeeded");
    const [a, b] = h.sim.servers;
    expect(a && b).toBeTruthy();
    const labels = new Map(accessRows(h).map((r) => [r.server_instance_id, r.source]));
    expect(labels).toEqual(
      new Map([
        [a?.server_instance_id, "notion-team-wiki"],
        [b?.server_instance_id, "notion-eng-docs"],
      ]),
    );
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    const bothServers = h.query<{ n: number }>("SELECT count(DISTINCT server_instance_id) AS n FROM pairs");
    expect(bothServers[0]?.n).toBe(2);
  });
});
