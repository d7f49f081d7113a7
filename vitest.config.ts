import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import pg from "pg";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two projects: every suite on SQLite, and the mirror, consumer, reliability and daemon suites again on
 * PostgreSQL (the same files, with SYNCMIRROR_TEST_DIALECT=postgres; see test/helpers/dialect.ts and
 * test/README.md). Where no PostgreSQL server answers, the second project is left out with one line
 * saying so, unless SYNCMIRROR_REQUIRE_POSTGRES=1 (CI), which makes that a failure. The console's
 * browser tests likewise need Debian's chromium (SYNCMIRROR_CHROMIUM, default /usr/bin/chromium):
 * without it they skip with one line, unless SYNCMIRROR_REQUIRE_BROWSER=1 (CI).
 */
const serverUrl = process.env.SYNCMIRROR_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

async function postgresAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const withPostgres = await postgresAnswers();
if (!withPostgres) {
  const where = new URL(serverUrl).host;
  if (process.env.SYNCMIRROR_REQUIRE_POSTGRES === "1")
    throw new Error(`SYNCMIRROR_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at ${where}`);
  console.warn(`PostgreSQL tests skipped: no server answers at ${where} (set SYNCMIRROR_TEST_DATABASE_URL)`);
}

const chromium = process.env.SYNCMIRROR_CHROMIUM ?? "/usr/bin/chromium";
const withBrowser = existsSync(chromium);
if (!withBrowser) {
  if (process.env.SYNCMIRROR_REQUIRE_BROWSER === "1")
    throw new Error(
      `SYNCMIRROR_REQUIRE_BROWSER=1 but there is no browser at ${chromium} (apt-get install chromium)`,
    );
  console.warn(
    `Browser tests skipped: no chromium at ${chromium} (apt-get install chromium, or set SYNCMIRROR_CHROMIUM)`,
  );
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most of a test's time is spent waiting on child processes, the simulator's polls and the
    // database, so two workers on a 2-core machine (vitest's default there is one) finish the suite
    // in about 80% of the time: measured 8.0 against 9.7 minutes.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Builds the PostgreSQL template once and drops the run's leftover databases at the end.
    globalSetup: ["test/helpers/postgres-global-setup.ts"],
    env: {
      SYNCMIRROR_POSTGRES_AVAILABLE: withPostgres ? "1" : "0",
      SYNCMIRROR_CHROMIUM: withBrowser ? chromium : "",
    },
    // The JSON report lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    projects: [
      { extends: true as const, test: { name: "sqlite", include: ["test/**/*.test.ts"] } },
      ...(withPostgres
        ? [
            {
              extends: true as const,
              test: {
                name: "postgres",
                include: [
                  "test/integration/mirror/**/*.test.ts",
                  "test/integration/consumers/**/*.test.ts",
                  "test/integration/reliability/**/*.test.ts",
                  "test/integration/daemon/**/*.test.ts",
                ],
                // Nothing in these touches the store: the same run twice would prove nothing more.
                exclude: [
                  ...configDefaults.exclude,
                  "test/integration/reliability/database-path.test.ts",
                  // The scheduler is store-independent; replicas/ kills a replica on PostgreSQL.
                  "test/integration/reliability/scheduling-crash.test.ts",
                  "test/integration/daemon/demo-simulate.test.ts",
                  "test/integration/daemon/init.test.ts",
                  "test/integration/mirror/cli-usage.test.ts",
                  // Black-box restatements, through the CLI, of semantics the mirror suites above
                  // already run on PostgreSQL: once, on SQLite, keeps the suite's time down.
                  "test/integration/mirror/sync-semantics-cli.test.ts",
                  "test/integration/mirror/access-contract.test.ts",
                  // About the service, not the store: the HTTP fault matrix (the API client's
                  // retries; the store sees the same calls) and plan/apply against the service
                  // (the store's part is in store/sync-configs-contract, on both stores).
                  "test/integration/reliability/faults-http.test.ts",
                  "test/integration/mirror/declared-configs.test.ts",
                ],
                env: { SYNCMIRROR_TEST_DIALECT: "postgres" },
              },
            },
          ]
        : []),
    ],
  },
});
