/**
 * An export's `modified_at` / `fetched_at` reach consumers as the same string from either store:
 * `toISOString()` form (UTC, milliseconds), whatever offset the export wrote; one that is not a
 * time is null. Both stores in one test, so it runs once (in the SQLite project) and needs
 * PostgreSQL.
 */
import { afterEach, describe, expect, it } from "vitest";
import { onPostgres, type TestDialect } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const USER = "user1@example.com";

/** The times each resource (by title) is exported with, and what the feed must serve for them. */
const TIMES: Record<
  string,
  { modified_at: string; fetched_at: string; served: [string | null, string | null] }
> = {
  zulu: {
    modified_at: "2025-11-10T20:07:07Z",
    fetched_at: "2025-11-11T08:00:00Z",
    served: ["2025-11-10T20:07:07.000Z", "2025-11-11T08:00:00.000Z"],
  },
  "east of UTC": {
    modified_at: "2025-11-10T20:07:07+02:00",
    fetched_at: "2025-11-11T09:30:00.250+01:00",
    served: ["2025-11-10T18:07:07.000Z", "2025-11-11T08:30:00.250Z"],
  },
  "west of UTC, past midnight": {
    modified_at: "2025-12-31T22:15:00-05:30",
    fetched_at: "2026-01-01T03:45:00.123456Z",
    served: ["2026-01-01T03:45:00.000Z", "2026-01-01T03:45:00.123Z"],
  },
  "not a time": {
    modified_at: "last Tuesday",
    fetched_at: "2025-11-11T08:00:00+00:00",
    served: [null, "2025-11-11T08:00:00.000Z"],
  },
  // Times JavaScript reads but PostgreSQL's timestamptz refuses: null, never a failed page.
  "year zero": {
    modified_at: "0000-01-01T00:00:00Z",
    fetched_at: "2025-11-11T08:00:00Z",
    served: [null, "2025-11-11T08:00:00.000Z"],
  },
  "negative year": {
    modified_at: "-000001-01-01T00:00:00Z",
    fetched_at: "+275760-09-13T00:00:00Z",
    served: [null, null],
  },
};

const opened: { h: Harness; proxy: RewritingProxy }[] = [];
afterEach(async () => {
  for (const { h, proxy } of opened.splice(0)) {
    await h.close();
    await proxy.close();
  }
});

/** One pass over the same documents, their times rewritten in the export, on `dialect`. */
async function mirrored(dialect: TestDialect): Promise<Harness> {
  const proxy = await startRewritingProxy();
  const h = await createHarness({ dialect, sim: { users: 1, docs: 0 }, api: { base_url: proxy.baseUrl } });
  opened.push({ h, proxy });
  proxy.target = h.sim.baseUrl;
  const server = h.sim.servers[0]?.server_instance_id as string;
  for (const title of Object.keys(TIMES))
    h.sim.docs.add({ server_instance_id: server, visibleTo: [USER], title });
  proxy.rewrites[0] = (body) => {
    const page = JSON.parse(body);
    for (const r of page.resources) Object.assign(r, { ...TIMES[r.title], served: undefined });
    return JSON.stringify(page);
  };
  const summary = await h.sync();
  expect(summary.outcome, summary.message).toBe("succeeded");
  return h;
}

/** `syncmirror changes --after 0`: each resource's times by title. */
async function feedTimes(h: Harness): Promise<Record<string, [unknown, unknown]>> {
  const cli = await h.cli(["changes", "--after", "0"]);
  expect(cli.code, cli.stderr).toBe(0);
  const { changes } = JSON.parse(cli.stdout) as {
    changes: { resource: { title: string; modified_at: unknown; fetched_at: unknown } }[];
  };
  return Object.fromEntries(changes.map(({ resource: r }) => [r.title, [r.modified_at, r.fetched_at]]));
}

describe.skipIf(onPostgres || !available)("export times in the change feed", () => {
  it("are the same UTC strings on SQLite and PostgreSQL, whatever offset the export used", async () => {
    const expected = Object.fromEntries(Object.entries(TIMES).map(([title, t]) => [title, t.served]));
    const sqlite = await feedTimes(await mirrored("sqlite"));
    const postgres = await feedTimes(await mirrored("postgres"));
    expect(sqlite).toEqual(expected);
    expect(postgres).toEqual(expected);
  });
});
