/**
 * Two history entries as `GET /v1/passes` serves them: a resumed pass that settled `partial` with an
 * error from each of two replicas, and a full pass still in flight before its trigger POST.
 */
import type { PassJson } from "../../src/console/history.js";

export const donePass: PassJson = {
  id: 7,
  mirror: "eng-wiki",
  mode: "incremental",
  since: "2026-11-25T18:58:09.408Z",
  trigger_id: "249472ff-ff81-4bee-b4bc-f83bea901cc7",
  state: "done",
  replica: { instance_id: "b058f0ed-0490-4688-8db3-e7d3b22e70d3", name: "vm-a:5275" },
  finished_by: { instance_id: "5f0c1d2e-7a8b-4c9d-8e0f-1a2b3c4d5e6f", name: "vm-b:812" },
  started_at: "2026-11-25T19:03:10.419Z",
  ended_at: "2026-11-25T19:04:12.840Z",
  duration_seconds: 62.421,
  outcome: "partial",
  message: "some sources did not succeed; their pairs keep their watermark",
  resumed: true,
  adopted: false,
  dry_run: false,
  keys: { new: 3, changed: 2, unchanged: 11 },
  counts: { upserted: 5, unchanged: 11, rejected: 1, deleted: 0, revoked: 0, held: 0, sweeps_held: 0 },
  runs: { completed: 2, failed: 1 },
  sources: { ok: 3, no_results: 2 },
  skipped: { not_accessible: 1 },
  skipped_total: 1,
  sweep_approval: null,
  errors: [
    {
      at: "2026-11-25T19:03:11.000Z",
      sync_id: null,
      user_email: null,
      source: null,
      error: "connect ECONNREFUSED 127.0.0.1:1",
      replica: "vm-a:5275",
    },
    {
      at: "2026-11-25T19:04:12.828Z",
      sync_id: "e05e8972-6951-48f8-9dc7-6c336ae00c97",
      user_email: "user1@example.com",
      source: "notion",
      error: "FAILED: Notion API answered 502 Bad Gateway",
      replica: "vm-b:812",
    },
  ],
};

export const inFlightPass: PassJson = {
  ...donePass,
  id: 8,
  mode: "full",
  since: null,
  trigger_id: null,
  state: "in_flight",
  ended_at: null,
  duration_seconds: null,
  outcome: null,
  message: null,
  resumed: null,
  finished_by: null,
  keys: { new: 0, changed: 0, unchanged: null },
  runs: {},
  sources: {},
  skipped: {},
  skipped_total: null,
  errors: [],
};
