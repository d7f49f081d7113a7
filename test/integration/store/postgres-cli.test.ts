/**
 * The real CLI against PostgreSQL problems an operator meets (docs/scaling-out.md, issue 9 "Bad input
 * and faults"): a missing database exits 2 naming the variable, never the URL; a server that does
 * not answer leaves the daemon alive, not ready, retrying; once it answers, the daemon gets ready.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { postgresForTests } from "../../helpers/postgres.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const available = await postgresForTests();
const URL_ENV = "SYNCMIRROR_PG_URL_UNDER_TEST";

let h: Harness | undefined;
let daemon: DaemonProcess | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await h?.close();
  h = undefined;
});

/** Points the harness's config at the URL held by URL_ENV. */
function useUrl(harness: Harness, url: string): void {
  const config = parse(readFileSync(harness.configPath, "utf8")) as Record<string, Record<string, unknown>>;
  config.database = { url_env: URL_ENV, lease_seconds: 5 };
  config.defaults = { ...config.defaults, incremental_cron: NEVER, full_cron: NEVER };
  writeFileSync(harness.configPath, stringify(config));
  harness.env[URL_ENV] = url;
}

describe.skipIf(!available)("the CLI on PostgreSQL", () => {
  it("exits 2 for a database that does not exist, naming the variable and never the URL or password", async () => {
    h = await createHarness({ dialect: "postgres" });
    const url = "postgres://postgres:pw-0f-the-test@127.0.0.1:5432/syncmirror_no_such_db";
    useUrl(h, url);
    for (const command of [["sync"], ["status"], ["run"]]) {
      const result = await h.cli(command);
      expect(result.code, `${command[0]}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(`$${URL_ENV}`);
      expect(result.stderr).toContain("does not exist");
      expect(result.stderr + result.stdout).not.toContain("pw-0f-the-test");
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("keeps a daemon alive and unready while the server does not answer, retrying with backoff", async () => {
    h = await createHarness({ dialect: "postgres" });
    useUrl(h, "postgres://postgres:pw-0f-the-test@127.0.0.1:1/postgres");
    daemon = await startDaemon(h);
    await until(
      () => daemon?.stderr().includes("database unreachable; retrying (not ready)"),
      "the retry log line",
    );
    expect((await daemon.get("/readyz")).status).toBe(503);
    expect((await daemon.get("/healthz")).status).toBe(200);
    expect(daemon.stderr()).not.toContain("pw-0f-the-test");
    const stopped = await daemon.stop("SIGTERM");
    expect(stopped.code).toBe(0);
  });
});
