/**
 * The Prometheus instruments of docs/reference/metrics.md, on a registry the caller owns (no default
 * registry: each test and each process builds its own).
 */

import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from "prom-client";
import { EXPORT_SOURCE_STATUSES, FINISHED_RUNS } from "./api/schemas.js";
import { SKIP_REASONS } from "./skip-reasons.js";
import { MODES } from "./store/types.js";
import { OUTCOMES } from "./sync/outcome.js";

export interface Metrics {
  registry: Registry;
  resources: Gauge<"mirror">;
  resourcesUpserted: Counter<"mirror" | "source_type">;
  resourcesUnchanged: Counter<"mirror" | "source_type">;
  resourcesDeleted: Counter<"mirror">;
  accessRevoked: Counter<"mirror">;
  triggers: Counter<"mirror" | "mode" | "outcome">;
  runs: Counter<"mirror" | "status">;
  sources: Counter<"mirror" | "source_type" | "status">;
  skippedPairs: Gauge<"mirror" | "reason">;
  sweepsHeld: Counter<"mirror">;
  heldRevocations: Gauge<"mirror">;
  pairsAwaitingBaseline: Gauge<"mirror">;
  lastSuccess: Gauge<"mirror" | "mode">;
  syncDuration: Histogram<"mirror" | "mode">;
  apiRequests: Counter<"method" | "route" | "code">;
  apiRequestDuration: Histogram<"method" | "route">;
  /** Scheduled times that started no pass of their own, by reason (`skip-reasons.ts`). */
  ticksSkipped: Counter<"mirror" | "mode" | "reason">;
  /** 1 while the mirror is paused (docs/console-history.md), from the database. */
  mirrorPaused: Gauge<"mirror">;
  /** 1 while the daemon could not apply a mirror's declared sync config (`manage_sync_configs`). */
  syncConfigDrift: Gauge<"mirror">;
  syncConfigApplyErrors: Counter<"mirror">;
  /** 1 on the process holding the mirror's lease (running its pass), 0 elsewhere (docs/scaling-out.md#fencing). */
  mirrorHeld: Gauge<"mirror">;
  /** Leases this process took from another holder that stopped renewing them (docs/scaling-out.md#fencing). */
  leaseTakeovers: Counter<"mirror">;
  /** Open problems by kind (docs/console-history.md), read from the database. */
  problems: Gauge<"mirror" | "kind">;
}

/** What a label value the service sends is served as when it is not a plain identifier. */
export const OTHER_LABEL = "other";
const IDENTIFIER = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A label value taken from the service (a skip reason, a source type or status): as sent when it is
 * an identifier, as every documented one is; else `other`. Free text could name a user, and
 * /metrics carries no personal data (it is served without credentials).
 */
export function upstreamLabel(value: string): string {
  return IDENTIFIER.test(value) ? value : OTHER_LABEL;
}

export function createMetrics(registry: Registry, options: { defaultMetrics?: boolean } = {}): Metrics {
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    resources: new Gauge({
      name: "syncmirror_resources",
      help: "Live resources visible through the mirror",
      labelNames: ["mirror"],
      registers,
    }),
    resourcesUpserted: new Counter({
      name: "syncmirror_resources_upserted_total",
      help: "Resources written because they were new, came back, or their content_hash changed",
      labelNames: ["mirror", "source_type"],
      registers,
    }),
    resourcesUnchanged: new Counter({
      name: "syncmirror_resources_unchanged_total",
      help: "Exported resources skipped because their content_hash was unchanged",
      labelNames: ["mirror", "source_type"],
      registers,
    }),
    resourcesDeleted: new Counter({
      name: "syncmirror_resources_deleted_total",
      help: "Resources tombstoned because no pair of any mirror can see them any more",
      labelNames: ["mirror"],
      registers,
    }),
    accessRevoked: new Counter({
      name: "syncmirror_access_revoked_total",
      help: "(user, key) access rows removed",
      labelNames: ["mirror"],
      registers,
    }),
    triggers: new Counter({
      name: "syncmirror_triggers_total",
      help: "Sync passes by mode and outcome",
      labelNames: ["mirror", "mode", "outcome"],
      registers,
    }),
    runs: new Counter({
      name: "syncmirror_runs_total",
      help: "Finished upstream runs by status",
      labelNames: ["mirror", "status"],
      registers,
    }),
    sources: new Counter({
      name: "syncmirror_sources_total",
      help: "Exported sources by export status",
      labelNames: ["mirror", "source_type", "status"],
      registers,
    }),
    skippedPairs: new Gauge({
      name: "syncmirror_skipped_pairs",
      help: "User x server pairs the mirror's latest trigger skipped, by reason (unlisted: past the first 100 the trigger lists)",
      labelNames: ["mirror", "reason"],
      registers,
    }),
    sweepsHeld: new Counter({
      name: "syncmirror_sweeps_held_total",
      help: "Sweeps held by the mass-delete guard",
      labelNames: ["mirror"],
      registers,
    }),
    heldRevocations: new Gauge({
      name: "syncmirror_held_revocations",
      help: "Keys whose revocation a held sweep is holding back now",
      labelNames: ["mirror"],
      registers,
    }),
    pairsAwaitingBaseline: new Gauge({
      name: "syncmirror_pairs_awaiting_baseline",
      help: "Pairs waiting for a full snapshot to give them a baseline",
      labelNames: ["mirror"],
      registers,
    }),
    lastSuccess: new Gauge({
      name: "syncmirror_last_success_timestamp_seconds",
      help: "Local Unix time of the last succeeded pass",
      labelNames: ["mirror", "mode"],
      registers,
    }),
    syncDuration: new Histogram({
      name: "syncmirror_sync_duration_seconds",
      help: "Duration of a sync pass, trigger to settle",
      labelNames: ["mirror", "mode"],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400],
      registers,
    }),
    apiRequests: new Counter({
      name: "syncmirror_api_requests_total",
      help: "Upstream API requests (each attempt) by templated route and status code",
      labelNames: ["method", "route", "code"],
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: "syncmirror_api_request_duration_seconds",
      help: "Upstream API request duration",
      labelNames: ["method", "route"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    ticksSkipped: new Counter({
      name: "syncmirror_ticks_skipped_total",
      help: "Scheduled times that started no pass of their own, counted by the process that recorded them: paused, coalesced into the pass due after the mirror's pass in flight, running or left by a dead replica (in_flight), or into one waiting for a free slot (waiting), or the database unreachable when the time fell (db_unreachable)",
      labelNames: ["mirror", "mode", "reason"],
      registers,
    }),
    mirrorPaused: new Gauge({
      name: "syncmirror_mirror_paused",
      help: "1 while the mirror is paused (its scheduled passes skipped), else 0",
      labelNames: ["mirror"],
      registers,
    }),
    syncConfigDrift: new Gauge({
      name: "syncmirror_sync_config_drift",
      help: "1 while the mirror's declared sync config differs from the service and the daemon could not apply it (manage_sync_configs), else 0",
      labelNames: ["mirror"],
      registers,
    }),
    syncConfigApplyErrors: new Counter({
      name: "syncmirror_sync_config_apply_errors_total",
      help: "Attempts of the daemon to apply a mirror's declared sync config that failed (manage_sync_configs)",
      labelNames: ["mirror"],
      registers,
    }),
    mirrorHeld: new Gauge({
      name: "syncmirror_mirror_held",
      help: "1 while this process holds the mirror's lease (runs its pass), else 0",
      labelNames: ["mirror"],
      registers,
    }),
    leaseTakeovers: new Counter({
      name: "syncmirror_lease_takeovers_total",
      help: "Leases this process took over from another holder that stopped renewing them (dead, paused or cut off)",
      labelNames: ["mirror"],
      registers,
    }),
    problems: new Gauge({
      name: "syncmirror_problems",
      help: "Open problems by kind (rejected_row, failed_source, incomplete_source, skipped_pair, held_sweep, config_error): `syncmirror problems` lists them",
      labelNames: ["mirror", "kind"],
      registers,
    }),
  };
}

/** The source types docs/reference/upstream-api.md names; exports may bring others, which appear at their first row. */
const SOURCE_TYPES = ["notion", "google_drive", "google_docs", "github"] as const;

/**
 * Every counter series of a configured mirror at 0, so the first event is an increase `rate()`
 * and `increase()` can see (a series that appears at 1 has no earlier sample to compare with).
 * Gauges the database holds (paused, problems, ...) are left out: until start-up has read them
 * (behind a locked or unreachable database, that may take a while) they are unknown, not 0.
 */
export function initMirrorSeries(metrics: Metrics, mirror: string, declared = false): void {
  const labels = { mirror };
  if (declared) metrics.syncConfigApplyErrors.inc(labels, 0);
  metrics.resourcesDeleted.inc(labels, 0);
  metrics.accessRevoked.inc(labels, 0);
  metrics.sweepsHeld.inc(labels, 0);
  metrics.leaseTakeovers.inc(labels, 0);
  metrics.mirrorHeld.set(labels, 0);
  for (const status of FINISHED_RUNS) metrics.runs.inc({ ...labels, status }, 0);
  for (const source_type of SOURCE_TYPES) {
    metrics.resourcesUpserted.inc({ ...labels, source_type }, 0);
    metrics.resourcesUnchanged.inc({ ...labels, source_type }, 0);
    for (const status of EXPORT_SOURCE_STATUSES) metrics.sources.inc({ ...labels, source_type, status }, 0);
  }
  for (const mode of MODES) {
    for (const reason of SKIP_REASONS) metrics.ticksSkipped.inc({ ...labels, mode, reason }, 0);
    for (const outcome of OUTCOMES) metrics.triggers.inc({ ...labels, mode, outcome }, 0);
  }
}
