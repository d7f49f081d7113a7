/**
 * `/metrics` of a running daemon, pass by pass, as docs/reference/metrics.md describes it: each
 * metric's type, the labels of every pass counter, what a second identical snapshot counts, which
 * mode a pass without `since` is, what a partial pass moves and what it leaves, the API's status
 * codes, and nothing personal or id-like in any label. Passes are asked for over HTTP, one at a
 * time, so every value is exact. SQLite only: the metrics are the same on both stores (the daemon
 * suite's /metrics tests run on both).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, readScrape, startDaemon, until } from "../../helpers/daemon.js";
import { accessOfSourceType } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const HTTP_TOKEN = "metrics-bearer-7d21";
const MAIN = { mirror: "main" };
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** Every metric docs/reference/metrics.md names, with its type. */
const TYPES: Record<string, string> = {
  syncmirror_resources: "gauge",
  syncmirror_resources_upserted_total: "counter",
  syncmirror_resources_unchanged_total: "counter",
  syncmirror_resources_deleted_total: "counter",
  syncmirror_access_revoked_total: "counter",
  syncmirror_triggers_total: "counter",
  syncmirror_runs_total: "counter",
  syncmirror_sources_total: "counter",
  syncmirror_skipped_pairs: "gauge",
  syncmirror_sweeps_held_total: "counter",
  syncmirror_held_revocations: "gauge",
  syncmirror_pairs_awaiting_baseline: "gauge",
  syncmirror_last_success_timestamp_seconds: "gauge",
  syncmirror_sync_duration_seconds: "histogram",
  syncmirror_api_requests_total: "counter",
  syncmirror_api_request_duration_seconds: "histogram",
  syncmirror_mirror_held: "gauge",
  syncmirror_lease_takeovers_total: "counter",
  syncmirror_ticks_skipped_total: "counter",
  syncmirror_problems: "gauge",
  syncmirror_mirror_paused: "gauge",
};

let h: Harness;
let d: DaemonProcess;

beforeAll(async () => {
  buildOnce();
  h = await createHarness({
    sim: { users: 3, docs: 80 },
    defaults: { incremental_cron: NEVER, full_cron: NEVER },
  });
  d = await startDaemon(h, { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN });
  await until(async () => (await d.get("/readyz")).status === 200, "/readyz 200");
});

afterAll(async () => {
  await d?.stop("SIGKILL");
  await h?.close();
});

/** One scrape, read as samples and `# TYPE` lines. */
async function scrape() {
  const res = await d.get("/metrics");
  expect(res.status).toBe(200);
  return readScrape(res.body);
}

/** Asks for a pass over HTTP and resolves with the scrape once the daemon counted it. */
async function pass(body?: object): Promise<Awaited<ReturnType<typeof scrape>>> {
  const total = (await d.metric("syncmirror_triggers_total", MAIN)) + 1;
  const res = await fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/trigger`, {
    method: "POST",
    headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  expect(res.status).toBe(200);
  await until(
    async () => (await d.metric("syncmirror_triggers_total", MAIN)) >= total,
    `pass ${total} in syncmirror_triggers_total`,
  );
  return scrape();
}

/** Per source type, from the mirror itself: distinct live keys and (user, key) rows. */
function rowsByType(): Record<string, { keys: number; rows: number }> {
  const out: Record<string, { keys: number; rows: number }> = {};
  for (const r of h.query<{ source_type: string; keys: number; rows: number }>(
    `SELECT r.source_type, count(DISTINCT r.key) AS keys, count(*) AS rows
     FROM resource_access a JOIN resources r ON r.key = a.key
     WHERE a.mirror = 'main' AND r.deleted_at IS NULL GROUP BY r.source_type`,
  ))
    out[r.source_type] = { keys: r.keys, rows: r.rows };
  return out;
}

describe("/metrics pass by pass", () => {
  it("labels a refused first pass full: it would have sent no since", async () => {
    h.sim.setPremium(false);
    const refused = await pass();
    h.sim.setPremium(true);
    expect(refused.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "refused" })).toBe(1);
    expect(refused.value("syncmirror_triggers_total", MAIN)).toBe(1);
    expect(refused.has("syncmirror_last_success_timestamp_seconds", MAIN)).toBe(false);
  });

  it("types every metric, labels each pass's counts, and counts an identical snapshot unchanged", async () => {
    const before = Math.floor(Date.now() / 1000);
    const first = await pass(); // asked as an incremental: no watermark yet, so no `since`
    for (const [name, type] of Object.entries(TYPES)) expect(first.types[name], name).toBe(type);
    expect(first.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" })).toBe(1);
    expect(first.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental" })).toBe(0);
    // The refused pass before it was timed too.
    expect(first.value("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "full" })).toBe(2);
    expect(first.value("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "incremental" })).toBe(0);
    expect(first.has("syncmirror_sync_duration_seconds_bucket", { ...MAIN, mode: "full", le: "+Inf" })).toBe(
      true,
    );
    const lastFull = first.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" });
    expect(lastFull).toBeGreaterThanOrEqual(before);
    expect(lastFull).toBeLessThanOrEqual(Date.now() / 1000);
    expect(first.has("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" })).toBe(
      false,
    );

    const byType = rowsByType();
    const types = Object.keys(byType);
    expect(types.length).toBeGreaterThan(1);
    const servers = h.sim.servers;
    for (const type of types) {
      const { keys, rows } = byType[type] as { keys: number; rows: number };
      const labels = { ...MAIN, source_type: type };
      expect(first.value("syncmirror_resources_upserted_total", labels), type).toBe(keys);
      expect(first.value("syncmirror_resources_unchanged_total", labels), type).toBe(rows - keys);
      const pairs = h.sim.users.length * servers.filter((s) => s.source_type === type).length;
      expect(first.value("syncmirror_sources_total", labels), type).toBe(pairs);
      expect(first.value("syncmirror_sources_total", { ...labels, status: "ok" }), type).toBe(pairs);
    }
    expect(first.value("syncmirror_resources", MAIN)).toBe(
      Object.values(byType).reduce((n, t) => n + t.keys, 0),
    );
    expect(first.value("syncmirror_runs_total", { ...MAIN, status: "completed" })).toBe(h.sim.users.length);
    expect(first.value("syncmirror_runs_total", MAIN)).toBe(h.sim.users.length);
    expect(first.value("syncmirror_pairs_awaiting_baseline", MAIN)).toBe(0);

    const second = await pass({ mode: "full" });
    expect(second.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" })).toBe(
      2,
    );
    expect(second.value("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "full" })).toBe(3);
    for (const type of types) {
      const { keys, rows } = byType[type] as { keys: number; rows: number };
      const labels = { ...MAIN, source_type: type };
      expect(second.value("syncmirror_resources_upserted_total", labels), type).toBe(keys);
      expect(second.value("syncmirror_resources_unchanged_total", labels), type).toBe(rows - keys + rows);
    }
    expect(second.value("syncmirror_resources_deleted_total", MAIN)).toBe(0);
    expect(second.value("syncmirror_access_revoked_total", MAIN)).toBe(0);
    expect(
      second.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }),
    ).toBeGreaterThanOrEqual(lastFull);

    const third = await pass();
    expect(
      third.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(1);
    expect(third.value("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "incremental" })).toBe(1);
    const lastIncremental = third.value("syncmirror_last_success_timestamp_seconds", {
      ...MAIN,
      mode: "incremental",
    });
    expect(lastIncremental).toBeGreaterThanOrEqual(
      third.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }),
    );
    expect(lastIncremental).toBeLessThanOrEqual(Date.now() / 1000);
  });

  it("counts a partial pass and the API's error codes, moves no success time, and names nobody", async () => {
    const start = await scrape();
    const [u1, u2] = h.sim.users;
    const server = h.sim.servers[0];
    if (!u1 || !u2 || !server) throw new Error("the simulator has too few users or servers");
    h.sim.setOutcome(
      { user: u1, server_instance_id: server.server_instance_id },
      { task: "FAILED", times: 1 },
    );
    h.sim.setOutcome(
      { user: u2, server_instance_id: server.server_instance_id },
      { task: "INCOMPLETE", times: 1 },
    );
    h.sim.faults.inject("GET /sync-task/{sync_id}", { kind: "500", times: 1 });
    h.sim.faults.inject("GET /sync-task/{sync_id}/export", { kind: "reset", times: 1 });
    const partial = await pass();
    expect(
      partial.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "partial" }),
    ).toBe(1);
    const runs = (s: typeof start, status: string) => s.value("syncmirror_runs_total", { ...MAIN, status });
    expect(runs(partial, "failed") - runs(start, "failed")).toBe(1);
    expect(runs(partial, "incomplete") - runs(start, "incomplete")).toBe(1);
    expect(runs(partial, "completed") - runs(start, "completed")).toBe(h.sim.users.length - 2);
    for (const mode of ["full", "incremental"]) {
      const labels = { ...MAIN, mode };
      expect(partial.value("syncmirror_last_success_timestamp_seconds", labels), mode).toBe(
        start.value("syncmirror_last_success_timestamp_seconds", labels),
      );
    }
    expect(partial.value("syncmirror_problems", { ...MAIN, kind: "failed_source" })).toBe(1);
    expect(partial.value("syncmirror_problems", { ...MAIN, kind: "incomplete_source" })).toBe(1);
    const route = { method: "GET", route: "/sync-task/{sync_id}" };
    expect(partial.value("syncmirror_api_requests_total", { ...route, code: "500" })).toBe(1);
    expect(partial.value("syncmirror_api_requests_total", { ...route, code: "200" })).toBeGreaterThan(0);
    expect(
      partial.value("syncmirror_api_requests_total", {
        method: "GET",
        route: "/sync-task/{sync_id}/export",
        code: "error",
      }),
    ).toBe(1);
    expect(partial.value("syncmirror_api_request_duration_seconds_count", route)).toBe(
      partial.value("syncmirror_api_requests_total", route),
    );
    expect(partial.has("syncmirror_api_request_duration_seconds_bucket", { ...route, le: "+Inf" })).toBe(
      true,
    );

    // A pass that succeeds for them again closes both problems.
    const healed = await pass();
    expect(
      healed.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(2);
    expect(healed.value("syncmirror_problems", MAIN)).toBe(0);

    const unauthenticated = await fetch(`http://127.0.0.1:${d.port}/metrics`);
    expect(unauthenticated.status).toBe(200);
    for (const user of h.sim.users) expect(healed.text).not.toContain(user);
    expect(healed.text).not.toMatch(/[a-z0-9.]+@[a-z0-9.-]+/i);
    for (const s of healed.samples)
      for (const [label, v] of Object.entries(s.labels)) expect(v, `${s.name} ${label}`).not.toMatch(UUID);
    for (const id of [h.sim.syncConfigId, ...h.sim.runs.list().map((r) => r.sync_id)])
      expect(healed.text).not.toContain(id);
  });
});

describe("/metrics around a held sweep", () => {
  it("counts the held sweep, gauges what it holds back, and clears both once approved", async () => {
    const start = await scrape();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of h.sim.docs.list())
      if (doc.server_instance_id === notion && !doc.deleted) h.sim.docs.remove(doc.docId);

    const held = await pass({ mode: "full" });
    expect(held.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "partial" })).toBe(1);
    // Nothing of a held sweep is revoked: what it holds back is still in the mirror.
    const kept = h.query<{ user_email: string; n: number }>(
      `SELECT a.user_email, count(*) AS n FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = 'main' AND r.source_type = 'notion' GROUP BY a.user_email`,
    );
    const heldBack = kept.reduce((n, k) => n + k.n, 0);
    // The gauge counts keys: a notion document several users see is one revocation held back.
    const heldKeys = accessOfSourceType(h, "notion").keys;
    expect(kept.length).toBeGreaterThan(0);
    expect(held.value("syncmirror_sweeps_held_total", MAIN)).toBe(kept.length);
    expect(held.value("syncmirror_held_revocations", MAIN)).toBe(heldKeys);
    expect(held.value("syncmirror_problems", { ...MAIN, kind: "held_sweep" })).toBe(kept.length);
    expect(held.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" })).toBe(
      start.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }),
    );
    const revokedBefore = held.value("syncmirror_access_revoked_total", MAIN);

    const approved = await fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/approve-sweep`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    });
    expect(approved.status).toBe(200);
    const applied = await pass({ mode: "full" });
    expect(applied.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" })).toBe(
      start.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" }) + 1,
    );
    expect(applied.value("syncmirror_access_revoked_total", MAIN) - revokedBefore).toBe(heldBack);
    expect(applied.value("syncmirror_held_revocations", MAIN)).toBe(0);
    expect(applied.value("syncmirror_sweeps_held_total", MAIN)).toBe(kept.length);
    expect(applied.value("syncmirror_problems", MAIN)).toBe(0);
    const live = rowsByType();
    expect(live.notion).toBeUndefined();
    expect(applied.value("syncmirror_resources", MAIN)).toBe(
      Object.values(live).reduce((n, t) => n + t.keys, 0),
    );
    expect(
      applied.value("syncmirror_resources_deleted_total", MAIN) -
        held.value("syncmirror_resources_deleted_total", MAIN),
    ).toBe(
      h.query<{ n: number }>(
        "SELECT count(*) AS n FROM resources WHERE source_type = 'notion' AND deleted_at IS NOT NULL",
      )[0]?.n,
    );
  });
});
