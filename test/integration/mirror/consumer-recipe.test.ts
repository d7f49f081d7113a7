/**
 * The documented per-user query for a search index: each live key a user may see once, however many
 * mirrors grant it, read through the `resource_access_user` index rather than every live resource.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, expectedKeys, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

/** Exactly as docs/consumers.md and docs/reference/database.md print it. */
const RECIPE = `SELECT r.* FROM (SELECT DISTINCT key FROM resource_access WHERE user_email = ?) AS a
JOIN resources r ON r.key = a.key
WHERE r.deleted_at IS NULL`;

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("the documented per-user query", () => {
  it.each(["docs/consumers.md", "docs/reference/database.md"])("is the one %s prints", (page) => {
    const text = readFileSync(join(import.meta.dirname, "..", "..", "..", page), "utf8");
    expect(text.replace(/^ +/gm, "")).toContain(RECIPE);
  });

  it("returns each key once with two mirrors of overlapping configs, through the user_email index", async () => {
    buildOnce();
    h = await createHarness({ sim: { docs: 60 } });
    const harness = h;
    const second = h.sim.configs.create({ name: "second" });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "other", sync_config_id: second });
    });
    const r = await h.cli(["sync"]);
    expect(r.code, r.stderr).toBe(0);
    const user = h.sim.users[0] as string;
    const perMirror = h.query<{ mirror: string; n: number }>(
      "SELECT mirror, count(*) AS n FROM resource_access WHERE user_email = ? GROUP BY mirror ORDER BY mirror",
      user,
    );
    expect(perMirror.map((m) => m.mirror)).toEqual(["main", "other"]);
    expect(perMirror[0]?.n).toBeGreaterThan(0);

    const rows = harness.query<{ key: string }>(RECIPE, user);
    const keys = rows.map((row) => row.key).sort();
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toEqual(expectedKeys(harness.sim, user));

    // The plan check is SQLite's (EXPLAIN QUERY PLAN); PostgreSQL chooses by its statistics.
    if (TEST_DIALECT !== "sqlite") return;
    const plan = harness
      .query<{ detail: string }>(`EXPLAIN QUERY PLAN ${RECIPE}`, user)
      .map((p) => p.detail)
      .join("\n");
    expect(plan).toMatch(
      /SEARCH resource_access USING COVERING INDEX resource_access_user \(user_email=\?\)/,
    );
    expect(plan).toMatch(/SEARCH r USING INDEX sqlite_autoindex_resources_1 \(key=\?\)/);
    expect(plan).not.toMatch(/SCAN r\b|SEARCH r USING INDEX resources_deleted_at/);
  });
});
