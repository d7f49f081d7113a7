/**
 * The feed's page and a sweep's access lookups reach their rows through the indexes on a table
 * nobody has analyzed yet (a cold mirror read while autovacuum is behind or off): a plan that
 * sorts or reads the whole table costs a page or a batch time in proportion to the table, which
 * at a mirror's size is seconds (measured in bench/RESULTS.md, Scale). Read from the plans, not
 * from timings.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS_WITH_ACCESS_SQL } from "../../../src/store/postgres/access.js";
import { ACCESS_SQL, PAGE_SQL } from "../../../src/store/postgres/feed.js";
import { createTestDatabase, postgresForTests } from "../../helpers/postgres.js";

const KEYS = 20_000;
const USERS = 5;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

describe.runIf(await postgresForTests())("PostgreSQL plans on tables not yet analyzed", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: pg.Client;
  const asked = Array.from({ length: 100 }, (_, i) => `k-${i * 97}`);

  const plan = async (sql: string, values: unknown[]) => {
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) ${sql}`,
      values,
    );
    return nodes(rows[0]?.["QUERY PLAN"][0].Plan as PlanNode).map(
      (n) => `${n["Node Type"]}${n["Relation Name"] ? ` on ${n["Relation Name"]}` : ""}`,
    );
  };

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
  });

  afterAll(async () => {
    await client?.end();
    await database?.drop();
  });

  it("reads a feed page by walking the seq index from the cursor, with no sort of what follows", async () => {
    for (const mirror of [null, "m"]) {
      const used = await plan(PAGE_SQL, [KEYS / 2, mirror, 101]);
      expect(used).not.toContain("Sort");
      expect(used).not.toContain("Seq Scan on changes");
    }
  });

  it("looks up a page's access lists and a batch's keys with access by key, never reading the table whole", async () => {
    for (const mirror of [null, "m"]) {
      expect(await plan(ACCESS_SQL, [asked, mirror])).not.toContain("Seq Scan on resource_access");
    }
    expect(await plan(KEYS_WITH_ACCESS_SQL, [asked])).not.toContain("Seq Scan on resource_access");
  });
});
