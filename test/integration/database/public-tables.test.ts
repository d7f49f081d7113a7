/**
 * The public tables as a reader sees them after real passes of the built CLI against the
 * simulator, on each store: every `resources` column holds what the export said (content.format /
 * text in content_format / content_text, JSON columns as valid JSON of the export's values), a
 * tombstone keeps its key and loses its content, `resource_access` is keyed (mirror, user_email,
 * key), `changes` counts up with the documented ops; PostgreSQL declares JSON columns `jsonb` and
 * times `timestamptz`, and sends one NOTIFY per committed page that recorded changes, carrying that
 * page's last seq. Both stores in one file: it runs once, in the SQLite project.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { spawnCli, until } from "../../helpers/daemon.js";
import type { TestDialect } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";
import { buildOnce } from "../daemon/setup.js";

const withPostgres = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const DIALECTS: TestDialect[] = withPostgres ? ["sqlite", "postgres"] : ["sqlite"];

const JSON_COLUMNS = ["fields", "metadata", "relations", "attachments", "provenance"] as const;
const TIME_COLUMNS: Record<string, string[]> = {
  resources: ["modified_at", "fetched_at", "deleted_at"],
  resource_access: ["last_seen_at"],
  changes: ["at"],
};

interface ExportedResource {
  key: string;
  source: string;
  source_type: string;
  server_instance_id: string;
  native_id: string;
  type: string;
  title: string | null;
  url: string | null;
  modified_at: string | null;
  fetched_at: string | null;
  content: { format: string; text: string } | null;
  content_status: string;
  content_hash: string;
  fields: unknown;
  metadata: unknown;
  relations: unknown;
  attachments: unknown;
  provenance: unknown;
}

interface ExportPage {
  resources: ExportedResource[];
  page: { offset: number };
}

let opened: { h: Harness; proxy: RewritingProxy; listener?: pg.Client }[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const { h, proxy, listener } of opened) {
    await listener?.end();
    await h.close();
    await proxy.close();
  }
  opened = [];
});

/** A harness whose export pages pass through a proxy that keeps them as served. */
async function harness(dialect: TestDialect, docs: number, pageSize: number) {
  const proxy = await startRewritingProxy();
  const h = await createHarness({
    dialect,
    sim: { users: 1, docs },
    api: { base_url: proxy.baseUrl },
    export: { page_size: pageSize },
  });
  proxy.target = h.sim.baseUrl;
  const entry: (typeof opened)[number] = { h, proxy };
  opened.push(entry);
  return entry;
}

function servedPages(proxy: RewritingProxy): ExportPage[] {
  return proxy.served.map((body) => JSON.parse(body.toString("utf8")) as ExportPage);
}

const time = (value: unknown) => (value === null ? null : new Date(String(value)).getTime());

describe.each(DIALECTS)("the public tables on %s, after real passes", (dialect) => {
  it("hold the export's resources column by column, tombstones without content, access and changes as documented", async () => {
    const { h, proxy } = await harness(dialect, 12, 5);
    // Values the simulator never writes: no content, no title, url or modified time, JSON that nests.
    proxy.rewrites[0] = (body) => {
      const page = JSON.parse(body) as ExportPage;
      const [bare, rich] = page.resources;
      Object.assign(bare as ExportedResource, {
        content: null,
        content_status: "metadata_only",
        title: null,
        url: null,
        modified_at: null,
      });
      Object.assign(rich as ExportedResource, {
        fields: { "Ünïcode ✓": ["a", { deep: [1, 2.5, null, true] }], empty: {} },
        metadata: { z: 1, a: '"quoted" and \\ slashed' },
      });
      return JSON.stringify(page);
    };
    const first = await h.cli(["sync", "--full"]);
    expect(first.code, first.stderr).toBe(0);

    const exported = new Map(servedPages(proxy).flatMap((p) => p.resources.map((r) => [r.key, r] as const)));
    expect(exported.size).toBe(12);
    const rows = h.query<Record<string, unknown>>("SELECT * FROM resources ORDER BY key");
    expect(rows.map((r) => r.key)).toEqual([...exported.keys()].sort());
    expect(
      rows.filter((r) => r.content_format === null && r.title === null && r.modified_at === null),
    ).toHaveLength(1);
    for (const row of rows) {
      const r = exported.get(String(row.key)) as ExportedResource;
      expect(
        {
          content_hash: row.content_hash,
          content_text: row.content_text,
          content_format: row.content_format,
          content_status: row.content_status,
          title: row.title,
          url: row.url,
          type: row.type,
          source_type: row.source_type,
          server_instance_id: row.server_instance_id,
          native_id: row.native_id,
          modified_at: time(row.modified_at),
          fetched_at: time(row.fetched_at),
          deleted_at: row.deleted_at,
          ...Object.fromEntries(JSON_COLUMNS.map((c) => [c, JSON.parse(String(row[c]))])),
        },
        r.key,
      ).toEqual({
        content_hash: r.content_hash,
        content_text: r.content?.text ?? null,
        content_format: r.content?.format ?? null,
        content_status: r.content_status,
        title: r.title,
        url: r.url,
        type: r.type,
        source_type: r.source_type,
        server_instance_id: r.server_instance_id,
        native_id: r.native_id,
        modified_at: time(r.modified_at),
        fetched_at: time(r.fetched_at),
        deleted_at: null,
        ...Object.fromEntries(JSON_COLUMNS.map((c) => [c, r[c]])),
      });
    }

    const access = h.query<Record<string, unknown>>(
      "SELECT mirror, user_email, key, server_instance_id, source, last_seen_at FROM resource_access ORDER BY key",
    );
    expect(access.map((a) => a.key)).toEqual([...exported.keys()].sort());
    for (const a of access) {
      const r = exported.get(String(a.key)) as ExportedResource;
      expect(a).toMatchObject({
        mirror: "main",
        user_email: "user1@example.com",
        server_instance_id: r.server_instance_id,
        source: r.source,
      });
      expect(Number.isNaN(time(a.last_seen_at)), String(a.key)).toBe(false);
    }

    const gone = h.sim.docs.list()[0];
    if (!gone) throw new Error("no document");
    h.sim.docs.remove(gone.docId);
    const second = await h.sync({ full: true });
    expect(second.outcome, second.message).toBe("succeeded");
    const tombstone = h.query<Record<string, unknown>>("SELECT * FROM resources WHERE key = ?", gone.key)[0];
    expect(Number.isNaN(time(tombstone?.deleted_at))).toBe(false);
    expect(tombstone).toMatchObject({
      key: gone.key,
      content_text: null,
      ...Object.fromEntries(JSON_COLUMNS.map((c) => [c, null])),
    });
    expect(h.query("SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL")).toEqual([{ n: 11 }]);
    // SQL NULL, not a JSON null (a jsonb 'null' reads as null through a driver, not through IS NULL).
    expect(
      h.query(
        `SELECT key FROM resources WHERE content_text IS NULL AND ${JSON_COLUMNS.map((c) => `${c} IS NULL`).join(" AND ")}`,
      ),
    ).toEqual([{ key: gone.key }]);

    const changes = h.query<{ seq: number; key: string; op: string; at: string }>(
      "SELECT seq, key, op, at FROM changes ORDER BY seq",
    );
    const seqs = changes.map((c) => Number(c.seq));
    expect(seqs.every((s, i) => Number.isInteger(s) && (i === 0 || s > (seqs[i - 1] as number)))).toBe(true);
    expect(
      changes
        .filter((c) => c.op === "upsert")
        .map((c) => c.key)
        .sort(),
    ).toEqual([...exported.keys()].sort());
    expect(changes.filter((c) => c.op !== "upsert").map((c) => [c.key, c.op])).toEqual([
      [gone.key, "delete"],
    ]);
    for (const c of changes) expect(Number.isNaN(time(c.at)), `${c.seq} at`).toBe(false);

    const primaryKey =
      dialect === "sqlite"
        ? h
            .query<{ name: string; pk: number }>("PRAGMA table_info(resource_access)")
            .filter((c) => c.pk > 0)
            .sort((a, b) => a.pk - b.pk)
            .map((c) => c.name)
        : h
            .query<{ name: string }>(
              `SELECT k.column_name AS name FROM information_schema.table_constraints t
               JOIN information_schema.key_column_usage k ON k.constraint_name = t.constraint_name
               WHERE t.table_name = 'resource_access' AND t.constraint_type = 'PRIMARY KEY'
               ORDER BY k.ordinal_position`,
            )
            .map((c) => c.name);
    expect(primaryKey).toEqual(["mirror", "user_email", "key"]);

    if (dialect === "sqlite") expect(h.query("PRAGMA journal_mode")).toEqual([{ journal_mode: "wal" }]);
    else {
      const types = h.query<{ table: string; column: string; type: string }>(
        `SELECT table_name AS table, column_name AS column, data_type AS type FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name IN ('resources', 'resource_access', 'changes')`,
      );
      const typeOf = (table: string, column: string) =>
        types.find((t) => t.table === table && t.column === column)?.type;
      for (const c of JSON_COLUMNS) expect(typeOf("resources", c), c).toBe("jsonb");
      expect(typeOf("changes", "seq")).toBe("bigint");
      for (const [table, columns] of Object.entries(TIME_COLUMNS))
        for (const c of columns) expect(typeOf(table, c), `${table}.${c}`).toBe("timestamp with time zone");
    }
  });
});

describe.each(DIALECTS)("JSON columns on %s, numbers a double cannot hold", (dialect) => {
  it("keep each number as exported, digit for digit, in every JSON column; the rest of the page reads as before", async () => {
    const { h, proxy } = await harness(dialect, 3, 250);
    // Written as raw text: JavaScript's own serializer could not produce these numbers.
    const exact = {
      fields:
        '{"id":12345678901234567890,"tiny":0.10000000000000000555,"huge":1e400,"plain":1.5,"neg":-98765432109876543210}',
      metadata: '{"nested":[{"n":-1.2345678901234567890123e-5}],"s":"12345678901234567890"}',
      relations: '[{"kind":"child","target_key":"k","resolved":true,"rank":9007199254740993}]',
      attachments: '[{"kind":"table","data":{"cells":[[1e-400,2]]},"complete":true,"tool_call_ids":[]}]',
      provenance: '{"tool_call_id":18446744073709551615}',
    };
    proxy.rewrites[0] = (body) => {
      const page = JSON.parse(body) as ExportPage;
      const first = page.resources[0] as ExportedResource;
      let text = JSON.stringify(page);
      for (const [column, json] of Object.entries(exact)) {
        const at = text.indexOf(`"${column}":`, text.indexOf(`"key":${JSON.stringify(first.key)}`));
        const value = JSON.stringify(first[column as keyof typeof exact]);
        const start = at + column.length + 3;
        expect(text.slice(start, start + value.length)).toBe(value);
        text = `${text.slice(0, start)}${json}${text.slice(start + value.length)}`;
      }
      return text;
    };
    const pass = await h.cli(["sync", "--full", "--json"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(JSON.parse(pass.stdout).mirrors[0].counts).toMatchObject({ upserted: 3, rejected: 0 });
    const first = (servedPages(proxy)[0] as ExportPage).resources[0] as ExportedResource;
    for (const [column, json] of Object.entries(exact)) {
      // SQLite keeps the text as written; jsonb compares numbers by value.
      const stored = dialect === "sqlite" ? "?" : "?::jsonb";
      const same = h.query(
        `SELECT ${column} = ${stored} AS same FROM resources WHERE key = ?`,
        json,
        first.key,
      );
      expect(same, column).toEqual([{ same: 1 }]);
    }
    // The other resources keep their plain JSON as before.
    expect(h.query("SELECT count(*) AS n FROM resources WHERE fields IS NOT NULL")).toEqual([{ n: 3 }]);
    // And the change feed serves them as the table holds them.
    const feed = await h.cli(["changes", "--after", "0", "--limit", "10"]);
    expect(feed.code, feed.stderr).toBe(0);
    for (const literal of [
      '"id":12345678901234567890',
      '"neg":-98765432109876543210',
      '"rank":9007199254740993',
      '"tool_call_id":18446744073709551615',
    ])
      expect(feed.stdout).toContain(literal);
  });
});

describe.runIf(withPostgres)("NOTIFY on PostgreSQL, after a pass of several export pages", () => {
  it("one syncmirror_changes notification per committed page, carrying the mirror and that page's last seq", async () => {
    const entry = await harness("postgres", 23, 5);
    const { h, proxy } = entry;
    const listener = new pg.Client({ connectionString: h.databaseUrl });
    entry.listener = listener;
    await listener.connect();
    const payloads: string[] = [];
    listener.on("notification", (n) => {
      if (n.channel === "syncmirror_changes") payloads.push(String(n.payload));
    });
    await listener.query("LISTEN syncmirror_changes");

    const pass = await h.cli(["sync"]);
    expect(pass.code, pass.stderr).toBe(0);
    const changes = h.query<{ seq: number; key: string }>("SELECT seq, key FROM changes ORDER BY seq");
    const last = Number(changes.at(-1)?.seq);
    await until(() => payloads.includes(`main:${last}`), "the last page's notification");

    const pages = servedPages(proxy).filter((p) => p.resources.length > 0);
    expect(pages).toHaveLength(5);
    expect(payloads).toHaveLength(pages.length);
    const notified = payloads.map((p) => {
      expect(p).toMatch(/^main:\d+$/);
      return Number(p.slice("main:".length));
    });
    expect(notified).toEqual([...notified].sort((a, b) => a - b));
    // Every key is new, so each page records one change per resource: the seqs a notification
    // covers are exactly one page's keys.
    const unmatched = pages.map((p) =>
      p.resources
        .map((r) => r.key)
        .sort()
        .join(" "),
    );
    notified.forEach((seq, i) => {
      const after = i === 0 ? 0 : (notified[i - 1] as number);
      const keys = changes
        .filter((c) => Number(c.seq) > after && Number(c.seq) <= seq)
        .map((c) => c.key)
        .sort()
        .join(" ");
      const page = unmatched.indexOf(keys);
      expect(page, `notification ${payloads[i]} covers one page's changes`).toBeGreaterThanOrEqual(0);
      unmatched.splice(page, 1);
    });
  });
});

describe("SQLite's files, created by a one-shot sync in a directory that does not exist yet", () => {
  // umask 000 under a running daemon: reliability/secrets.
  it("are 0600 (database, -wal, -shm) under the usual umask 022", async () => {
    const { h } = await harness("sqlite", 3, 250);
    const dbPath = join(h.dir, "new", "nested", "mirror.db");
    const config = parse(readFileSync(h.configPath, "utf8"));
    config.database.path = dbPath;
    writeFileSync(h.configPath, stringify(config));
    // Held runs keep the pass (and so the open database) waiting while the files are looked at.
    h.sim.runs.hold();
    const sync = spawnCli(["sync", "--config", h.configPath], h.env, { prelude: "umask 022" });
    const files = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`];
    await until(() => files.every((f) => existsSync(f)), "the database and its -wal and -shm files");
    const modes = files.map((f) => [f, statSync(f).mode & 0o777]);
    h.sim.runs.release();
    expect((await sync.exited).code, sync.stderr()).toBe(0);
    expect(modes).toEqual(files.map((f) => [f, 0o600]));
    for (const f of files.filter((f) => existsSync(f))) expect(statSync(f).mode & 0o777, f).toBe(0o600);
  });
});
