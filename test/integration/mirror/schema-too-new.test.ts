/**
 * A mirror migrated by a newer syncmirror is refused at start on either store (exit 2, naming both
 * schema versions), rather than run by a binary that does not know its schema.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readJournal } from "../../../src/store/migrations-dir.js";
import { execute } from "../../helpers/db-write.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const MIGRATIONS_TABLE =
  TEST_DIALECT === "postgres" ? "drizzle.__drizzle_migrations" : "__drizzle_migrations";

describe("a database migrated by a newer syncmirror", () => {
  it("is refused by status, sync, run and check with exit 2, naming both versions; nothing runs", async () => {
    h = await createHarness();
    await h.sync();
    const journal = readJournal(TEST_DIALECT).entries;
    const newest = journal.at(-1);
    await execute(
      h,
      `INSERT INTO ${MIGRATIONS_TABLE} (hash, created_at) VALUES ('from-the-future', ?)`,
      (newest?.when ?? 0) + 1000,
    );
    try {
      const before = h.sim.requests.length;
      for (const command of [["status"], ["sync"], ["run"]]) {
        const r = await h.cli(command);
        expect(r.code, command.join(" ")).toBe(2);
        expect(r.stderr).toContain(`${journal.length + 1} schema migration(s) applied`);
        expect(r.stderr).toContain(`this syncmirror's ${journal.length} (up to ${newest?.tag})`);
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
      expect(h.sim.requests.length).toBe(before);
      // check reports it among its problems, and exits 2 as it does for any database it is refused.
      const check = await h.cli(["check"]);
      expect(check.code).toBe(2);
      expect(`${check.stdout}${check.stderr}`).toContain(
        `this syncmirror's ${journal.length} (up to ${newest?.tag})`,
      );
    } finally {
      // The PostgreSQL suite hands its databases on to later tests.
      await execute(h, `DELETE FROM ${MIGRATIONS_TABLE} WHERE hash = 'from-the-future'`);
    }
  });
});
