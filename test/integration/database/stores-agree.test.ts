/**
 * One scripted history of upstream changes and passes, through the built CLI, on a SQLite file and
 * on a PostgreSQL database over identical simulators: after each pass both stores hold the same
 * public state (resources, resource_access, pairs, changes) and `sync` answers alike. Runs once,
 * in the SQLite project.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DbSnapshot, snapshot } from "../../helpers/db-snapshot.js";
import type { TestDialect } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

const withPostgres = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const U1 = "user1@example.com";
const U2 = "user2@example.com";
const U3 = "user3@example.com";

let opened: Harness[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const h of opened) await h.close();
  opened = [];
});

interface Step {
  name: string;
  upstream: (h: Harness) => void;
  args: string[];
  code: number;
  check?: (h: Harness) => void;
}

/** Keys removed upstream while U1's source failed: still live, U1 keeps them. */
const removedWhileFailing = new Map<Harness, string>();

const docWith = (h: Harness, n: number, test: (users: string[]) => boolean) => {
  const found = h.sim.docs.list().filter((d) => !d.deleted && test(d.visibleTo))[n];
  if (!found) throw new Error("no such document");
  return found;
};

const STEPS: Step[] = [
  { name: "first pass", upstream: () => {}, args: [], code: 0 },
  {
    name: "incremental after edits",
    upstream: (h) => {
      h.sim.docs.edit(docWith(h, 0, (u) => u.length > 0).docId, { title: "edited" });
      h.sim.docs.remove(docWith(h, 1, (u) => u.length > 0).docId);
      h.sim.docs.setVisibility(docWith(h, 2, (u) => u.includes(U1) && u.includes(U2)).docId, [U1]);
      h.sim.docs.add({ server_instance_id: h.sim.servers[0]?.server_instance_id ?? "", visibleTo: [U2, U3] });
    },
    args: [],
    code: 0,
  },
  { name: "full sweep", upstream: () => {}, args: ["--full"], code: 0 },
  {
    name: "full with a leaver and a failed source",
    upstream: (h) => {
      h.sim.people.leaveProject(U3);
      const doc = docWith(h, 0, (u) => u.includes(U1));
      removedWhileFailing.set(h, doc.key);
      h.sim.docs.remove(doc.docId);
      h.sim.setOutcome({ user: U1 }, { task: "FAILED", times: 1 });
    },
    args: ["--full"],
    code: 1,
    check: (h) => {
      const key = removedWhileFailing.get(h);
      expect(h.query("SELECT deleted_at FROM resources WHERE key = ?", key)).toEqual([{ deleted_at: null }]);
      expect(
        h.query("SELECT user_email FROM resource_access WHERE key = ? AND user_email = ?", key, U1),
      ).toHaveLength(1);
      expect(h.query("SELECT count(*) AS n FROM resource_access WHERE user_email = ?", U3)).toEqual([
        { n: 0 },
      ]);
    },
  },
  {
    name: "full again: access back",
    upstream: (h) => {
      h.sim.people.joinProject(U3);
      const doc = docWith(h, 0, (u) => u.length === 1 && u.includes(U1));
      h.sim.docs.setVisibility(doc.docId, [U1, U2]);
    },
    args: ["--full"],
    code: 0,
    check: (h) => {
      const key = removedWhileFailing.get(h);
      expect(
        h.query("SELECT count(*) AS n FROM resources WHERE key = ? AND deleted_at IS NOT NULL", key),
      ).toEqual([{ n: 1 }]);
    },
  },
  { name: "the same export again", upstream: () => {}, args: ["--full"], code: 0 },
];

const JSON_COLUMNS = ["fields", "metadata", "relations", "attachments", "provenance"];

/** JSON columns as values: jsonb keeps an object's keys in its own order. */
function comparable(state: DbSnapshot): DbSnapshot {
  const resources = state.resources.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([c, v]) => [
        c,
        JSON_COLUMNS.includes(c) && typeof v === "string" ? JSON.parse(v) : v,
      ]),
    ),
  );
  return { ...state, resources };
}

async function outcomeOf(h: Harness, args: string[]) {
  const r = await h.cli(["sync", "--json", ...args]);
  const mirror = JSON.parse(r.stdout).mirrors[0];
  return { code: r.code, outcome: mirror.outcome, counts: mirror.counts, keys: mirror.keys };
}

describe.runIf(withPostgres)("SQLite and PostgreSQL after the same passes", () => {
  it("hold the same resources, access, pairs and changes, and sync answers alike, pass after pass", async () => {
    const stores: Record<TestDialect, Harness> = {
      sqlite: await createHarness({ dialect: "sqlite", sim: { docs: 24, seed: 7 } }),
      postgres: await createHarness({ dialect: "postgres", sim: { docs: 24, seed: 7 } }),
    };
    opened = Object.values(stores);
    let seen = 0;
    for (const step of STEPS) {
      const results: Record<string, unknown> = {};
      const states: Partial<Record<TestDialect, DbSnapshot>> = {};
      for (const [dialect, h] of Object.entries(stores) as [TestDialect, Harness][]) {
        step.upstream(h);
        results[dialect] = await outcomeOf(h, step.args);
        states[dialect] = comparable(snapshot(h));
      }
      expect(results.postgres, step.name).toEqual(results.sqlite);
      expect((results.sqlite as { code: number }).code, step.name).toBe(step.code);
      for (const h of Object.values(stores)) step.check?.(h);
      expect(states.postgres, step.name).toEqual(states.sqlite);
      const changeCount = (states.sqlite as DbSnapshot).changes.length;
      if (step.name === "the same export again") expect(changeCount, step.name).toBe(seen);
      seen = changeCount;
    }
  });
});
