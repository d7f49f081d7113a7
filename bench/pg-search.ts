/**
 * `node dist-bench/bench/pg-search.js [--resources N] [--rounds R]`: where search costs PostgreSQL's
 * ingest (issue 23 item 5). Store-only cold ingest of N synthetic resources (the simulator's titles
 * and bodies, as bench/search.ts writes them to SQLite) in 200-resource page transactions through
 * the store's own page statements, on a fresh database each: search off; search on (the generated
 * `search_vector` column and its GIN index, maintained row by row); and the floor: search off,
 * then the index built once over the stored rows (`search.apply(true)`), the cost of building it
 * alone. Then the parts of that cost, timed on the stored rows: the accent folding and
 * tokenizing (the generated expression evaluated alone, nothing written). Rounds interleave the
 * variants; medians are printed.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { silentLogger } from "../src/log.js";
import { createRandom } from "../src/simulator/random.js";
import { generateBody, generateSize, generateTitle } from "../src/simulator/text.js";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import type { Store } from "../src/store/store.js";
import type { ResourceWrite, SeenRow } from "../src/store/types.js";
import { adminUrl, withDatabase } from "./pg-server.js";
import { syntheticResource, syntheticSeen } from "./synthetic-resource.js";

const USERS = Array.from({ length: 20 }, (_, i) => `user${i + 1}@example.com`);
const PAGE = 200;
const URL_ENV = "BENCH_PG_SEARCH_URL";

interface Page {
  writes: ResourceWrite[];
  seen: SeenRow[];
}

function pages(n: number, at: string): Page[] {
  const random = createRandom(42);
  const out: Page[] = [];
  for (let from = 0; from < n; from += PAGE) {
    const page: Page = { writes: [], seen: [] };
    for (let i = from; i < Math.min(n, from + PAGE); i++) {
      const type = random.pick(["page", "document", "issue", "spreadsheet"]);
      const title = generateTitle(type, random);
      const key = `bench:${i}`;
      page.writes.push(
        syntheticResource(i, title, type, generateBody(title, generateSize(random), random), at),
      );
      const users = new Set<string>();
      for (let u = random.int(1, 5); u > 0; u--) users.add(random.pick(USERS));
      for (const userEmail of users) page.seen.push(syntheticSeen(key, userEmail, at));
    }
    out.push(page);
  }
  return out;
}

async function ingest(store: Store, all: Page[], at: string): Promise<number> {
  const started = performance.now();
  for (const [n, page] of all.entries()) {
    await store.transaction(async (tx) => {
      const written = new Set(page.writes.map((w) => w.key));
      const firstSeen = new Set<string>();
      await Promise.all([
        tx.resources.writeAll(page.writes, "bench", at),
        tx.changes.recordSeen(
          page.seen,
          page.seen.map(
            (s) => written.has(s.key) && !firstSeen.has(s.key) && firstSeen.add(s.key) !== undefined,
          ),
          { at, mirror: "bench", scope: `page-${n}` },
        ),
      ]);
    });
  }
  return performance.now() - started;
}

async function withStore<T>(url: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openPostgresStore({ url, urlEnv: URL_ENV, poolSize: 2, log: silentLogger() });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { resources: { type: "string", default: "5000" }, rounds: { type: "string", default: "3" } },
  });
  const n = Number(values.resources);
  const at = new Date().toISOString();
  const all = pages(n, at);
  const chars = all.reduce(
    (sum, p) => sum + p.writes.reduce((s, w) => s + (w.contentText?.length ?? 0), 0),
    0,
  );
  const times: Record<string, number[]> = {};
  const add = (name: string, ms: number) => {
    times[name] = [...(times[name] ?? []), ms];
    process.stderr.write(`[pg-search] ${name}: ${(ms / 1000).toFixed(2)} s\n`);
  };
  for (let round = 0; round < Number(values.rounds); round++) {
    await withDatabase(adminUrl(), "search-off", (url) =>
      withStore(url, async (store) => {
        add("ingest, search off", await ingest(store, all, at));
        const started = performance.now();
        await store.search.apply(true);
        add("index built once over the stored rows (the floor)", performance.now() - started);
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const expression = (
            await client.query<{ e: string }>(
              "SELECT pg_get_expr(adbin, adrelid) AS e FROM pg_attrdef WHERE adrelid = 'resources'::regclass",
            )
          ).rows[0]?.e;
          const timed = async (name: string, sql: string) => {
            const t = performance.now();
            await client.query(sql);
            add(name, performance.now() - t);
          };
          await timed(
            "  part: the vector's expression alone (fold + tokenize)",
            `SELECT sum(length(${expression})) FROM resources`,
          );
          await timed(
            "  part: tokenizing alone (no accent folding)",
            "SELECT sum(length(to_tsvector('simple', coalesce(title, '')) || to_tsvector('simple', coalesce(content_text, '')))) FROM resources",
          );
          await timed(
            "  part: reading the rows (length of the text)",
            "SELECT sum(length(content_text)) FROM resources",
          );
        } finally {
          await client.end();
        }
      }),
    );
    await withDatabase(adminUrl(), "search-on", (url) =>
      withStore(url, async (store) => {
        await store.search.apply(true);
        add("ingest, search on", await ingest(store, all, at));
      }),
    );
  }
  const off = median(times["ingest, search off"] ?? []);
  const lines = [
    `PostgreSQL search cost: ${n} resources, ${Math.round(chars / n)} characters of text each on average, pages of ${PAGE}; median of ${values.rounds} rounds.`,
    "",
    "| Step | s | / ingest with search off |",
    "|---|---:|---:|",
    ...Object.entries(times).map(
      ([name, ms]) => `| ${name} | ${(median(ms) / 1000).toFixed(2)} | ${(median(ms) / off).toFixed(2)} |`,
    ),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `pg-search failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
