/**
 * The feed's page and a sweep's access lookups reach their rows through the indexes on a table
 * nobody has analyzed yet (a cold mirror read while autovacuum is behind or off): a plan that
 * sorts or reads the whole table costs a page or a batch time in proportion to the table, which
 * at a mirror's size is seconds (measured in bench/RESULTS.md, Scale). A sweep's revocations
 * must not read a pair's rows once for each of them. Read from the plans, not from timings.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  KEYS_SEEN_SINCE_SQL,
  KEYS_WITH_ACCESS_SQL,
  REVOCABLE_KEYS_SQL,
  REVOKE_PAIR_SQL,
  SWEEP_MISSED_SQL,
} from "../../../src/store/postgres/access.js";
import { CREATE_PENDING_SQL, createChangeRepo } from "../../../src/store/postgres/changes.js";
import type { Conn } from "../../../src/store/postgres/connection.js";
import { PAGE_SQL, readChanges } from "../../../src/store/postgres/feed.js";
import type { AccessRepo } from "../../../src/store/store.js";
import { createTestDatabase, postgresForTests } from "../../helpers/postgres.js";

const KEYS = 20_000;
const USERS = 5;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Subplan Name"?: string;
  "Group Key"?: string[];
  "Actual Loops"?: number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];
const named = (plan: PlanNode) =>
  `${plan["Node Type"]}${plan["Relation Name"] ? ` on ${plan["Relation Name"]}` : ""}`;

describe.runIf(await postgresForTests())("PostgreSQL plans on tables not yet analyzed", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: pg.Client;
  const asked = Array.from({ length: 100 }, (_, i) => `k-${i * 97}`);

  const explain = async (sql: string, values: unknown[]) => {
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) ${sql}`,
      values,
    );
    return rows[0]?.["QUERY PLAN"][0].Plan as PlanNode;
  };
  const plan = async (sql: string, values: unknown[]) => nodes(await explain(sql, values)).map(named);

  beforeAll(async () => {
    database = await createTestDatabase();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(
      `INSERT INTO changes (key, op, at, mirror, sync_id)
       SELECT 'k-' || i, 'upsert', now(), 'm', 's' FROM generate_series(1, $1::int) AS i`,
      [KEYS],
    );
    await client.query(
      `INSERT INTO resource_access (mirror, user_email, key, server_instance_id, source, last_seen_at, missed_full_count)
       SELECT 'm', 'u' || u || '@example.com', 'k-' || i, 'srv', 'direct', now(), 0
         FROM generate_series(1, $1::int) AS i, generate_series(1, $2::int) AS u`,
      [KEYS, USERS],
    );
    await client.query(
      `INSERT INTO resources (key, content_hash, content_text, source_type, server_instance_id, native_id,
         fields, updated_at)
       SELECT 'k-' || i, 'h', 'text', 'notion', 'srv', 'n-' || i, '{}', now() FROM generate_series(1, $1::int) AS i`,
      [KEYS],
    );
  });

  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it("sends a feed page as one statement: the changes, their rows and their access lists", async () => {
    const sent: string[] = [];
    const counting = {
      query: (text: string, values: unknown[]) => {
        sent.push(text);
        return client.query(text, values);
      },
    } as unknown as pg.Pool;
    const page = await readChanges(counting, { after: KEYS / 2, limit: 100, mirror: "m" });
    expect(sent).toEqual([PAGE_SQL]);
    expect(page.hasMore).toBe(true);
    expect(page.changes.map((c) => c.seq)).toEqual(Array.from({ length: 100 }, (_, i) => KEYS / 2 + 1 + i));
    expect(page.changes[0]).toMatchObject({
      key: `k-${KEYS / 2 + 1}`,
      resource: { nativeId: `n-${KEYS / 2 + 1}`, fields: {} },
      access: Array.from({ length: USERS }, (_, u) => ({
        mirror: "m",
        userEmail: `u${u + 1}@example.com`,
        source: "direct",
      })),
    });
    expect(page.nextAfter).toBe(KEYS / 2 + 100);
    const last = await readChanges(counting, { after: KEYS - 1, limit: 100 });
    expect(last).toMatchObject({ hasMore: false, nextAfter: KEYS });
    expect(last.changes).toHaveLength(1);
    expect(await readChanges(counting, { after: KEYS, limit: 100 })).toEqual({
      changes: [],
      nextAfter: KEYS,
      hasMore: false,
    });
    expect(sent).toHaveLength(3);
  });

  it("reads a feed page in one statement, walking the seq index from the cursor with no sort of what follows", async () => {
    for (const mirror of [null, "m"]) {
      const top = await explain(PAGE_SQL, [KEYS / 2, mirror, 100]);
      // The page's changes: the CTE the rest reads. A sort above it orders the page's 100 rows.
      const page = nodes(top).find((n) => n["Subplan Name"] === "CTE page");
      expect(page, "the page's changes as a CTE").toBeDefined();
      const reading = nodes(page as PlanNode).map(named);
      expect(reading).not.toContain("Sort");
      expect(reading).not.toContain("Seq Scan on changes");
      expect(reading).toContain("Index Scan on changes");
      const used = nodes(top).map(named);
      expect(used).not.toContain("Seq Scan on changes");
      expect(used).not.toContain("Seq Scan on resources");
      expect(used).toContain("Index Scan on resources");
    }
  });

  it("looks up a page's access lists and a batch's keys with access by key, never reading the table whole", async () => {
    for (const mirror of [null, "m"]) {
      const used = await plan(PAGE_SQL, [KEYS / 2, mirror, 100]);
      expect(used).not.toContain("Seq Scan on resource_access");
      expect(used.filter((n) => n.endsWith("on resource_access")).length).toBeGreaterThan(0);
    }
    expect(await plan(KEYS_WITH_ACCESS_SQL, [asked])).not.toContain("Seq Scan on resource_access");
  });

  const users = Array.from({ length: USERS }, (_, u) => `u${u + 1}@example.com`);
  const future = new Date(Date.now() + 86_400_000).toISOString();
  it.each([
    [
      "a pass saw",
      KEYS_SEEN_SINCE_SQL,
      [users.map(() => "m"), users, users.map(() => "srv"), new Date(0).toISOString()],
    ],
    [
      "a held sweep would revoke",
      REVOCABLE_KEYS_SQL,
      [users.map(() => "m"), users, users.map(() => "srv"), users.map(() => future), 1],
    ],
  ])(
    "counts the keys %s from rows already made distinct by a plan node, not by count(DISTINCT)'s sort",
    async (_, sql, values) => {
      // count(DISTINCT) has no such node: it sorts inside the aggregate, in one process (access.ts).
      const below = nodes(await explain(sql as string, values as unknown[])).slice(1);
      const distinct = below.filter(
        (n) => n["Node Type"] === "Unique" || (n["Group Key"] ?? []).some((k) => k.endsWith(".key")),
      );
      expect(distinct.length, "a node below the count making the keys distinct").toBeGreaterThan(0);
    },
  );

  it("sweeps and revokes a pair's keys reading its rows a bounded number of times, not once per row it holds", async () => {
    // The plan as run (ANALYZE), rolled back: how often each scan of resource_access ran.
    const loops = async (sql: string, values: unknown[]) => {
      await client.query("BEGIN");
      try {
        const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
          values,
        );
        const top = rows[0]?.["QUERY PLAN"][0].Plan as PlanNode;
        return nodes(top)
          .filter((n) => n["Relation Name"] === "resource_access")
          .map((n) => n["Actual Loops"] ?? 0);
      } finally {
        await client.query("ROLLBACK");
      }
    };
    const pair = ["m", "u1@example.com", "srv"];
    const past = new Date(0).toISOString();
    // Nothing missed, then 100 keys revoked at the threshold, then a pair's 100 keys revoked: a
    // scan may run once, or once per key removed (a lookup by key), never once per row the user holds.
    for (const [sql, values, removed] of [
      [SWEEP_MISSED_SQL, [...pair, past, 1, 100], 0],
      [SWEEP_MISSED_SQL, [...pair, future, 1, 100], 100],
      [REVOKE_PAIR_SQL, [...pair, 100], 100],
    ] as const) {
      const ran = await loops(sql, [...values]);
      expect(ran.length, "scans of resource_access").toBeGreaterThan(0);
      expect(Math.max(...ran), `${sql.slice(0, 40)}... removing ${removed}`).toBeLessThanOrEqual(removed + 1);
    }
  });

  it("records a batch of changes of distinct keys in one statement, each replacing its key's change in its scope", async () => {
    const sent: string[] = [];
    const counting = {
      query: (config: pg.QueryConfig) => {
        sent.push(config.name ?? config.text);
        return client.query(config);
      },
    } as unknown as Conn["client"];
    const repo = createChangeRepo({ client: counting } as Conn, () => {}, {} as AccessRepo);
    await client.query(CREATE_PENDING_SQL);
    await client.query("BEGIN");
    try {
      const at = "2026-11-29T10:00:00.000Z";
      // k-1 and k-2 have an upsert in scope s: the delete replaces it, the access keeps its op.
      await repo.recordAll([
        { key: "k-1", op: "delete", at, mirror: "m", scope: "s" },
        { key: "k-2", op: "access", at, mirror: "m", scope: "s" },
        { key: "none-before", op: "delete", at, mirror: "m", scope: "s" },
      ]);
      expect(sent).toHaveLength(1);
      const pending = await client.query("SELECT key, op FROM syncmirror_pending_changes ORDER BY n");
      expect(pending.rows).toEqual([
        { key: "k-1", op: "delete" },
        { key: "k-2", op: "upsert" },
        { key: "none-before", op: "delete" },
      ]);
      const left = await client.query(
        "SELECT key FROM changes WHERE key IN ('k-1', 'k-2', 'k-3') ORDER BY key",
      );
      expect(left.rows).toEqual([{ key: "k-3" }]);
    } finally {
      await client.query("ROLLBACK");
    }
  });
});
