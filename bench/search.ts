/**
 * Search and feed benchmark (`node dist-bench/bench/search.js [--resources N]`, also run at the
 * end of `npm run bench`): writes bench/SEARCH-RESULTS.md. Nothing here asserts.
 *
 * 1. Store-only cold ingest of N synthetic resources (simulator titles and bodies, 1-4 of 20 users
 *    each) through the real store statements in 200-resource page transactions, search off vs on:
 *    the triggers' whole cost with nothing else in the way (the worst case).
 * 2. End to end: a cold `syncmirror sync` against the simulator process, search off vs on.
 * 3. The FTS index's size beside the database (dbstat), and `reindex` time over the N resources.
 * 4. Search latency p50/p99 as random users: one word, two words, a phrase.
 * 5. Feed reads (`readChanges`, pages of 1000) in changes per second.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createRandom } from "../src/simulator/random.js";
import { generateBody, generateSize, generateTitle } from "../src/simulator/text.js";
import { readChanges } from "../src/store/sqlite/feed.js";
import { openDatabase } from "../src/store/sqlite/open.js";
import { rebuildSearchIndex, searchResources } from "../src/store/sqlite/search.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { StoreOps } from "../src/store/store.js";
import { createMirrorDb, runSyncPass } from "./mirror.js";
import { startSimProcess } from "./sim-process.js";
import { syntheticResource, syntheticSeen } from "./synthetic-resource.js";

const ROOT = resolve(import.meta.dirname, "..", "..");
const USERS = Array.from({ length: 20 }, (_, i) => `user${i + 1}@example.com`);
const PAGE = 200;
const QUERIES = {
  "one word": ["incident", "migration", "budget", "retention", "payments", "escalation"],
  "two words": [
    "incident postmortem",
    "database backup",
    "vendor contract",
    "token rotation",
    "cache latency",
  ],
  phrase: ['"action item"', '"access token"', '"error rate"', '"design doc"', '"support ticket"'],
};
const SEARCHES_PER_KIND = 300;

const round = (v: number, digits = 0) => Math.round(v * 10 ** digits) / 10 ** digits;
const mb = (bytes: number) => round(bytes / 2 ** 20, 1);

async function ingest(path: string, n: number, search: boolean): Promise<{ ms: number; bytes: number }> {
  const store = openSqliteStore(path, { lock: true });
  let ms: number;
  try {
    if (search) await store.search.apply(true);
    const random = createRandom(42);
    const at = new Date().toISOString();
    const started = performance.now();
    for (let from = 0; from < n; from += PAGE) {
      await store.transaction(async (tx) => {
        for (let i = from; i < Math.min(n, from + PAGE); i++) await writeOne(tx, random, i, at);
      });
    }
    ms = performance.now() - started;
  } finally {
    await store.close();
  }
  const open = openDatabase(path);
  try {
    open.sqlite.pragma("wal_checkpoint(TRUNCATE)");
    return { ms, bytes: dbBytes(open.sqlite) };
  } finally {
    open.close();
  }
}

async function writeOne(
  store: StoreOps,
  random: ReturnType<typeof createRandom>,
  i: number,
  at: string,
): Promise<void> {
  const type = random.pick(["page", "document", "issue", "spreadsheet"]);
  const title = generateTitle(type, random);
  const key = `bench:${i}`;
  const text = generateBody(title, generateSize(random), random);
  await store.resources.writeAll([syntheticResource(i, title, type, text, at)], "bench", at);
  for (let u = random.int(1, 5); u > 0; u--) {
    const userEmail = random.pick(USERS);
    await store.access.seeAll([syntheticSeen(key, userEmail, at)]);
  }
  await store.changes.recordAll([
    { key, op: "upsert", at, mirror: "bench", scope: `page-${Math.floor(i / PAGE)}` },
  ]);
}

function dbBytes(sqlite: ReturnType<typeof openDatabase>["sqlite"], like = "%"): number {
  return (
    sqlite.prepare("SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat WHERE name LIKE ?").get(like) as {
      n: number;
    }
  ).n;
}

async function latencies(path: string): Promise<Record<string, { p50: number; p99: number; hits: number }>> {
  const open = openDatabase(path);
  try {
    const random = createRandom(7);
    const out: Record<string, { p50: number; p99: number; hits: number }> = {};
    for (const [kind, queries] of Object.entries(QUERIES)) {
      const times: number[] = [];
      let hits = 0;
      for (let i = 0; i < SEARCHES_PER_KIND; i++) {
        const started = performance.now();
        const found = await searchResources(open.sqlite, {
          userEmail: random.pick(USERS),
          query: random.pick(queries),
          limit: 20,
        });
        times.push(performance.now() - started);
        hits += found.length;
      }
      times.sort((a, b) => a - b);
      const at = (q: number) =>
        round(times[Math.min(times.length - 1, Math.floor(q * times.length))] as number, 2);
      out[kind] = { p50: at(0.5), p99: at(0.99), hits: round(hits / SEARCHES_PER_KIND, 1) };
    }
    return out;
  } finally {
    open.close();
  }
}

async function feedRate(path: string): Promise<{ changes: number; perSecond: number }> {
  const open = openDatabase(path);
  try {
    const started = performance.now();
    let after = 0;
    let changes = 0;
    for (;;) {
      const page = await readChanges(open.sqlite, { after, limit: 1000 });
      changes += page.changes.length;
      after = page.nextAfter;
      if (!page.hasMore) break;
    }
    return { changes, perSecond: Math.round(changes / ((performance.now() - started) / 1000)) };
  } finally {
    open.close();
  }
}

async function reindexMs(path: string): Promise<number> {
  const open = openDatabase(path, { lock: true });
  try {
    const started = performance.now();
    await rebuildSearchIndex(open.sqlite);
    return performance.now() - started;
  } finally {
    open.close();
  }
}

/** Cold `syncmirror sync` end to end, search off and on, best of `repeats` each. */
async function endToEnd(dir: string, docs: number, repeats: number): Promise<Record<"off" | "on", number>> {
  const sim = await startSimProcess({
    cli: join(ROOT, "dist", "cli.js"),
    seed: 3,
    users: 3,
    docs,
    servers: "notion=1,github=1",
  });
  try {
    const best = { off: Number.POSITIVE_INFINITY, on: Number.POSITIVE_INFINITY };
    for (let r = 0; r < repeats; r++) {
      for (const mode of ["off", "on"] as const) {
        const setup = {
          cli: join(ROOT, "dist", "cli.js"),
          dir,
          name: `e2e-${mode}-${r}`,
          sim,
          pollSeconds: 0.2,
          pollMaxSeconds: 1,
          cpuProfDir: undefined,
        };
        const db = createMirrorDb(setup);
        const config = JSON.parse(readFileSync(db.configPath, "utf8")) as Record<string, unknown>;
        writeFileSync(db.configPath, JSON.stringify({ ...config, search: { enabled: mode === "on" } }));
        const { summary } = await runSyncPass(setup, db, []);
        const rows = summary.counts.upserted + summary.counts.unchanged;
        best[mode] = Math.min(best[mode], summary.duration_seconds / rows);
      }
    }
    return { off: Math.round(1 / best.off), on: Math.round(1 / best.on) };
  } finally {
    await sim.stop();
  }
}

async function main(): Promise<void> {
  // The store compiled into dist-bench/ looks for its migrations beside it.
  const migrations = join(ROOT, "dist-bench", "migrations");
  if (!existsSync(migrations)) symlinkSync(join(ROOT, "migrations"), migrations);
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const n = arg("resources", 100_000);
  const e2eDocs = arg("e2e-docs", 20_000);
  const dir = mkdtempSync(join(tmpdir(), "syncmirror-search-bench-"));
  const log = (s: string) => process.stderr.write(`[search bench] ${s}\n`);
  try {
    log(`store-only ingest of ${n} resources, search off ...`);
    const off = await ingest(join(dir, "off.db"), n, false);
    log(`... ${Math.round(off.ms)} ms; search on ...`);
    const on = await ingest(join(dir, "on.db"), n, true);
    log(`... ${Math.round(on.ms)} ms; reindex, sizes, latency, feed ...`);
    const rebuildMs = await reindexMs(join(dir, "off.db"));
    const sized = openDatabase(join(dir, "on.db"));
    const ftsBytes =
      dbBytes(sized.sqlite, "resources_fts%") + dbBytes(sized.sqlite, "sqlite_autoindex_resources_fts%");
    sized.close();
    const lat = await latencies(join(dir, "on.db"));
    const feed = await feedRate(join(dir, "on.db"));
    log(`end to end: cold sync of ${e2eDocs} docs x 3 users, search off vs on ...`);
    const e2e = await endToEnd(dir, e2eDocs, 2);
    const rate = (ms: number) => Math.round(n / (ms / 1000));
    const slower = (a: number, b: number) => `${round((a / b - 1) * 100)}%`;
    const md = [
      "# Search and feed benchmark",
      "",
      `Run ${new Date().toISOString()} by \`node dist-bench/bench/search.js\` (also the last step of \`npm run bench\`). Every run rewrites this file.`,
      "",
      `${n} synthetic resources (simulator titles and bodies, median ~3 KB), each visible to 1-4 of 20 users in one mirror.`,
      "",
      "| Measure | Search off | Search on | Cost |",
      "|---|---:|---:|---:|",
      `| Store-only cold ingest (resources/s, page transactions of ${PAGE}) | ${rate(off.ms)} | ${rate(on.ms)} | ${slower(on.ms, off.ms)} slower |`,
      `| End-to-end cold \`sync\` (rows/s, ${e2eDocs} docs x 3 users, best of 2) | ${e2e.off} | ${e2e.on} | ${slower(e2e.off, e2e.on)} slower |`,
      `| Database size (MB, after checkpoint) | ${mb(off.bytes)} | ${mb(on.bytes)} | +${mb(on.bytes - off.bytes)} MB |`,
      `| FTS index (resources_fts* tables, MB) | | ${mb(ftsBytes)} | ${round((ftsBytes / off.bytes) * 100)}% of the database without it |`,
      `| \`reindex\` over the ${n} resources | | ${round(rebuildMs / 1000, 1)} s | |`,
      "",
      `Search latency (ms, ${SEARCHES_PER_KIND} searches per kind, limit 20, random user, ACL join included):`,
      "",
      "| Query | p50 | p99 | mean results |",
      "|---|---:|---:|---:|",
      ...Object.entries(lat).map(
        ([kind, l]) =>
          `| ${kind} (${QUERIES[kind as keyof typeof QUERIES].slice(0, 2).join(", ")}, ...) | ${l.p50} | ${l.p99} | ${l.hits} |`,
      ),
      "",
      `Feed reads: ${feed.changes} changes (each with its row and access list) in pages of 1000 at ${feed.perSecond} changes/s.`,
      "",
    ].join("\n");
    writeFileSync(join(ROOT, "bench", "SEARCH-RESULTS.md"), md);
    process.stdout.write(`${md}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
