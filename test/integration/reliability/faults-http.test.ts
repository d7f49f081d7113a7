/**
 * HTTP fault matrix: rate limits, 5xx bursts, resets, slow answers, unreadable and incomplete
 * bodies, injected by the simulator on one route each. Every case ends in the state a fault-free
 * run over an identical simulator reaches, with exactly one trigger created upstream, and shows
 * in `syncmirror_api_requests_total`.
 */
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import type { Fault } from "../../../src/simulator/index.js";
import { exitCodeFor } from "../../../src/sync/outcome.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { triggerPosts } from "../../helpers/requests.js";
import { proxiedHarness } from "../../helpers/rewriting-proxy.js";
import { counterValue, createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

const EXPORT = "GET /sync-task/{sync_id}/export";
const LIST = "GET /sync-task";
const TRIGGER = "POST /sync-task";

interface RecoveredCase {
  name: string;
  route: string;
  fault: Fault;
  /** What `syncmirror_api_requests_total` shows for the faulted attempts. */
  code: string;
  /** A second fault, for the request to the same route after the first fault's. */
  andThen?: Fault;
  /** Trigger answered without a usable body: its runs are adopted from the run list. */
  adopted?: boolean;
  /** Trigger POSTs that reached the service, when not one (plus those refused before any work). */
  posts?: number;
  timeoutSeconds?: number;
}

const RECOVERED: RecoveredCase[] = [
  {
    name: "429 with Retry-After on the trigger",
    route: TRIGGER,
    fault: { kind: "429", retryAfterSeconds: 1 },
    code: "429",
  },
  {
    name: "429 without Retry-After on export pages",
    route: EXPORT,
    fault: { kind: "429", times: 2 },
    code: "429",
  },
  { name: "a burst of 500 on the run list", route: LIST, fault: { kind: "500", times: 3 }, code: "500" },
  { name: "a burst of 502 on export pages", route: EXPORT, fault: { kind: "502", times: 3 }, code: "502" },
  {
    name: "a burst of 503 on the trigger (refused before work)",
    route: TRIGGER,
    fault: { kind: "503", times: 3 },
    code: "503",
  },
  {
    name: "connection resets on export pages",
    route: EXPORT,
    fault: { kind: "reset", times: 2 },
    code: "error",
  },
  {
    name: "a run list slower than api.timeout_seconds",
    route: LIST,
    fault: { kind: "delay", ms: 30_000, times: 2 },
    code: "error",
    timeoutSeconds: 0.5,
  },
  {
    name: "the trigger's connection dropped after it was handled",
    route: TRIGGER,
    fault: { kind: "drop-after" },
    code: "error",
    adopted: true,
  },
  {
    name: "a connection reset on the trigger before it was handled: the run list shows no run, so it is POSTed once more",
    route: TRIGGER,
    fault: { kind: "reset" },
    code: "error",
    posts: 2,
  },
  {
    name: "500 on the trigger: the run list shows no run, so it is POSTed once more",
    route: TRIGGER,
    fault: { kind: "500" },
    code: "500",
    posts: 2,
  },
  {
    name: "500 twice on the trigger: each time the run list shows no run, so it is POSTed again, within api.max_attempts",
    route: TRIGGER,
    fault: { kind: "500", times: 2 },
    code: "500",
    posts: 3,
  },
  {
    name: "a reset before the first trigger was handled, then the second's response lost after it acted",
    route: TRIGGER,
    fault: { kind: "reset" },
    andThen: { kind: "drop-after" },
    code: "error",
    adopted: true,
    posts: 2,
  },
  {
    name: "the trigger answered with malformed JSON",
    route: TRIGGER,
    fault: { kind: "malformed" },
    code: "200",
    adopted: true,
  },
  {
    name: "the trigger answered without trigger_id",
    route: TRIGGER,
    fault: { kind: "missing-field", field: "trigger_id" },
    code: "201",
    adopted: true,
  },
];

describe("HTTP faults a pass recovers from on its own", () => {
  it.each(RECOVERED)("$name", async (c) => {
    twins = await createTwins({
      sim: { docs: 40 },
      ...(c.timeoutSeconds ? { api: { timeout_seconds: c.timeoutSeconds } } : {}),
    });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");
    hurt.sim.faults.inject(c.route, c.fault);
    if (c.andThen) hurt.sim.faults.inject(c.route, c.andThen);

    const summary = await hurt.sync();
    expect(summary.outcome, summary.message).toBe("succeeded");
    expect(exitCodeFor([summary.outcome])).toBe(0);
    expect(summary.adopted).toBe(c.adopted ?? false);
    expect(hurt.sim.faults.pending(), "every injected fault was used").toEqual([]);
    const [method, route] = c.route.split(" ") as [string, string];
    const faulted = await counterValue(hurt.metrics.apiRequests, { method, route, code: c.code });
    expect(faulted).toBe((c.fault.times ?? 1) + (c.andThen ? (c.andThen.times ?? 1) : 0));
    // A refusal before any work (429, 503) is retried on the trigger; a POST that may have acted
    // is POSTed again only once the run list shows it created nothing.
    const refusedPosts =
      c.route === TRIGGER && ["429", "503"].includes(c.fault.kind) ? (c.fault.times ?? 1) : 0;
    expect(triggerPosts(hurt)).toBe(refusedPosts + (c.posts ?? 1));
    expect(
      new Set(hurt.sim.runs.list().map((r) => r.trigger_id)).size,
      "exactly one trigger's runs were created",
    ).toBe(1);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
    // Every POST whose answer was lost is an error the pass met: its history keeps each.
    const lost = c.route === TRIGGER ? (c.posts ?? 1) - (c.adopted ? 0 : 1) : 0;
    expect(
      hurt.query<{ error: string }>("SELECT error FROM pass_errors WHERE error LIKE '%/sync-task%'"),
    ).toHaveLength(lost);
  });
});

describe("fields the API does not document", () => {
  it("are ignored in every answer, nested ones too: full, incremental and full passes end as a clean twin's", async () => {
    twins = await createTwins({ sim: { docs: 40 } });
    const { clean, hurt } = twins;
    hurt.sim.faults.inject("*", { kind: "extra-fields", times: Infinity });
    for (const [i, full] of [false, false, true].entries()) {
      for (const h of [clean, hurt]) {
        // Something for the incremental and the full pass to carry: an edit, then a removal.
        const doc = h.sim.docs.list()[i];
        if (i === 1 && doc) h.sim.docs.edit(doc.docId);
        if (i === 2 && doc) h.sim.docs.remove(doc.docId);
        const summary = await h.sync({ full });
        expect(summary.outcome, summary.message).toBe("succeeded");
        h.sim.clock.advance(3_600_000);
      }
    }
    const withExtras = hurt.sim.requests.filter((r) => r.fault === "extra-fields").map((r) => r.route);
    expect(withExtras).toEqual(expect.arrayContaining(["/sync-task", "/sync-task/{sync_id}/export"]));
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});

describe("a trigger POST whose connection dies, through the CLI", () => {
  it("exits 0 with one trigger's runs when the first POST is reset and the second's answer is lost", async () => {
    twins = await createTwins({ sim: { docs: 20 } });
    const { hurt } = twins;
    hurt.sim.faults.inject(TRIGGER, { kind: "reset" });
    hurt.sim.faults.inject(TRIGGER, { kind: "drop-after" });
    const r = await hurt.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).mirrors[0]).toMatchObject({ outcome: "succeeded", adopted: true });
    expect(triggerPosts(hurt)).toBe(2);
    expect(new Set(hurt.sim.runs.list().map((run) => run.trigger_id)).size).toBe(1);
  });
});

describe("a trigger the service handled, answered 5xx by a gateway, through the CLI", () => {
  // The service created the runs; only its answer was lost. POSTing again would start a second sync.
  it.each([500, 502, 504])(
    "%i: the runs are adopted from the run list and nothing is POSTed again",
    async (status) => {
      const { h, proxy } = await proxiedHarness({ sim: { docs: 20 } });
      onTestFinished(() => h.close());
      proxy.triggerLostWith = status;
      const r = await h.cli(["sync", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).mirrors[0]).toMatchObject({ outcome: "succeeded", adopted: true });
      expect(triggerPosts(h)).toBe(1);
      expect(new Set(h.sim.runs.list().map((run) => run.trigger_id)).size).toBe(1);
      expect(databaseProblems(h)).toEqual([]);
    },
  );
});

describe("a trigger the service is slow to answer, through the CLI", () => {
  // The client stopped waiting, not the service: its runs may appear in the run list only later,
  // so an empty list right after the timeout proves nothing and a second POST would start a second sync.
  it("is not POSTed again in the pass that timed out; the next pass adopts its runs", async () => {
    const { h, proxy } = await proxiedHarness({ sim: { docs: 20 }, api: { timeout_seconds: 0.5 } });
    onTestFinished(() => h.close());
    proxy.triggerHeldMs = 2_000;
    const first = await h.cli(["sync", "--json"]);
    expect(first.code, first.stderr).toBe(1);
    const failed = JSON.parse(first.stdout).mirrors[0];
    expect(failed.outcome).toBe("failed");
    expect(failed.message).toMatch(
      /POST \/sync-task timed out .*the service may still be starting its runs, so it is not POSTed again.*the next pass/,
    );
    await vi.waitFor(() => expect(h.sim.runs.list().length).toBeGreaterThan(0), { timeout: 10_000 });

    const second = await h.cli(["sync", "--json"]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout).mirrors[0]).toMatchObject({ outcome: "succeeded", adopted: true });
    expect(triggerPosts(h)).toBe(1);
    expect(new Set(h.sim.runs.list().map((run) => run.trigger_id)).size).toBe(1);
    expect(databaseProblems(h)).toEqual([]);
  });
});

describe("a redirect, through the CLI", () => {
  // An http:// base URL in front of a service that moved to https:// is the usual cause. The
  // bearer token is never sent after a redirect, so the operator must learn where it points.
  it("is not followed: exit 1 naming where it points, without its query, and api.base_url", async () => {
    const { h, proxy } = await proxiedHarness({ sim: { docs: 5 } });
    onTestFinished(() => h.close());
    proxy.intercept = ({ path }) => ({
      status: 308,
      body: "",
      headers: { location: `https://api.example.com/api/v1${path}?session=s3cr3t` },
    });
    const r = await h.cli(["sync"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/main\s+full\s+failed/);
    expect(r.stdout).toMatch(
      /POST \/sync-task was redirected \(308\) to https:\/\/api\.example\.com\/api\/v1\/sync-task: redirects are not followed.*set api\.base_url/,
    );
    expect(`${r.stdout}${r.stderr}`).not.toContain("s3cr3t");
    expect(h.sim.requests).toEqual([]);
  });
});

interface FailedCase {
  name: string;
  route: string;
  fault: Fault;
  /** The pass's outcome, and what its message (or its run errors) must say. */
  outcome: "failed" | "partial";
  says: RegExp;
  /** The pass that recovers: a plain `sync` resumes the trigger; a failed export needs a full. */
  recover: "sync" | "full";
  timeoutSeconds?: number;
}

const FAILED: FailedCase[] = [
  {
    name: "503 on the run list outlasting api.max_attempts",
    route: LIST,
    fault: { kind: "503", times: Number.POSITIVE_INFINITY },
    outcome: "failed",
    says: /GET \/sync-task still failed after 2 attempts \(last: 503.*the next pass tries again/,
    recover: "sync",
  },
  {
    name: "a run list slower than api.timeout_seconds on every attempt",
    route: LIST,
    fault: { kind: "delay", ms: 30_000, times: Number.POSITIVE_INFINITY },
    outcome: "failed",
    says: /GET \/sync-task still failed after 2 attempts \(last: timeout after 500 ms\).*raise api\.max_attempts \/ api\.timeout_seconds.*stays in flight/,
    recover: "sync",
    timeoutSeconds: 0.5,
  },
  {
    // A 429 refuses the POST before any work: nothing was created, and the next pass triggers once.
    name: "429 on every trigger POST outlasting api.max_attempts",
    route: TRIGGER,
    fault: { kind: "429", retryAfterSeconds: 0, times: Number.POSITIVE_INFINITY },
    outcome: "failed",
    says: /POST \/sync-task still failed after 2 attempts \(last: 429.*rate-limiting; the next pass tries again.*stays in flight/,
    recover: "sync",
  },
  {
    name: "every trigger POST (api.max_attempts, 2 here) reset before it was handled (the run list shows no run of any)",
    route: TRIGGER,
    fault: { kind: "reset", times: 2 },
    outcome: "failed",
    says: /POST \/sync-task got no usable answer 2 times .*no run of any.*stays in flight/,
    recover: "sync",
  },
  {
    name: "malformed JSON on the run list",
    route: LIST,
    fault: { kind: "malformed" },
    outcome: "failed",
    says: /GET \/sync-task: the response is not JSON.*stays in flight/,
    recover: "sync",
  },
  {
    name: "the run list without its items",
    route: LIST,
    fault: { kind: "missing-field", field: "items" },
    outcome: "failed",
    says: /GET \/sync-task: the response does not have the documented shape at items.*stays in flight/,
    recover: "sync",
  },
  {
    // Without meta nothing tells whether the list goes on: a short list of runs, or of project
    // users, must not be taken for the whole.
    name: "the run list without its meta",
    route: LIST,
    fault: { kind: "missing-field", field: "meta" },
    outcome: "failed",
    says: /GET \/sync-task: the response does not have the documented shape at meta.*stays in flight/,
    recover: "sync",
  },
  {
    name: "malformed JSON on an export page",
    route: EXPORT,
    fault: { kind: "malformed" },
    outcome: "partial",
    says: /export\/?.*the response is not JSON/,
    recover: "full",
  },
  {
    name: "an export page without its page object",
    route: EXPORT,
    fault: { kind: "missing-field", field: "page" },
    outcome: "partial",
    says: /documented shape at page/,
    recover: "full",
  },
];

describe("HTTP faults that end a pass with a clear error, and the pass that recovers", () => {
  it.each(FAILED)("$name", async (c) => {
    twins = await createTwins({
      sim: { docs: 40 },
      maxAttempts: 2,
      ...(c.timeoutSeconds ? { api: { timeout_seconds: c.timeoutSeconds } } : {}),
    });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");
    hurt.sim.faults.inject(c.route, c.fault);

    const summary = await hurt.sync();
    expect(summary.outcome).toBe(c.outcome);
    expect(exitCodeFor([summary.outcome])).toBe(1);
    const said = [summary.message, ...summary.errors.map((e) => e.error)].join("\n");
    expect(said).toMatch(c.says);
    expect(databaseProblems(hurt)).toEqual([]);
    const [method, route] = c.route.split(" ") as [string, string];
    expect(await counterValue(hurt.metrics.apiRequests, { method, route })).toBeGreaterThan(0);
    const inFlight = hurt.query("SELECT 1 FROM triggers WHERE state != 'done'").length;
    expect(inFlight, "a failed pass keeps its trigger to resume; a partial one settles").toBe(
      c.outcome === "failed" ? 1 : 0,
    );

    hurt.sim.faults.clear();
    const full = c.recover === "full";
    if (full) expect((await clean.sync({ full })).outcome).toBe("succeeded");
    expect((await hurt.sync({ full })).outcome).toBe("succeeded");
    expect(new Set(hurt.sim.runs.list().map((r) => r.trigger_id)).size).toBe(full ? 2 : 1);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it("asks no export page again once the token was rejected on one: the pass fails at once", async () => {
    twins = await createTwins({ sim: { docs: 40, users: 3 }, maxAttempts: 2 });
    const { hurt } = twins;
    hurt.sim.faults.inject(EXPORT, { kind: "401", times: Number.POSITIVE_INFINITY });
    const summary = await hurt.sync();
    expect(summary.outcome).toBe("failed");
    expect(summary.message).toMatch(/token/);
    const asked = hurt.sim.requests
      .filter((r) => `${r.method} ${r.route}` === EXPORT)
      .map((r) => `${r.path}?offset=${r.query.offset}`);
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.length, asked.join("\n")).toBe(new Set(asked).size);
  });

  it("exits 1 through the CLI and names the route, the cause and the next step", async () => {
    twins = await createTwins({ sim: { docs: 10 }, maxAttempts: 2 });
    twins.hurt.sim.faults.inject(LIST, { kind: "503", times: Number.POSITIVE_INFINITY });
    const r = await twins.hurt.cli(["sync"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/main\s+full\s+failed/);
    expect(r.stdout).toMatch(/GET \/sync-task still failed after 2 attempts .*next pass/);
  });

  it("exits 1 through the CLI when no export page could be read, and its line says why and what to do", async () => {
    twins = await createTwins({ sim: { docs: 10 }, maxAttempts: 2 });
    twins.hurt.sim.faults.inject(EXPORT, {
      kind: "503",
      retryAfterSeconds: 0,
      times: Number.POSITIVE_INFINITY,
    });
    const r = await twins.hurt.cli(["sync"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/main\s+full\s+failed/);
    expect(r.stdout).toMatch(
      /no export of 3 run\(s\) could be read; the last error: GET \/sync-task\/\{sync_id\}\/export still failed after 2 attempts \(last: 503.*the next pass tries again/,
    );
  });
});
