/** Runs as the API shows them: list items (no summaries, errors or timestamps) and full detail. */
import { formatOffsetIso } from "./clock.js";
import { type RunRecord, runStatusOf, type SimState } from "./state.js";
import { configWarningsOf, summaryOf } from "./summary.js";
import { sourceIdentity } from "./trigger.js";

function runHeader(run: RunRecord) {
  return {
    sync_id: run.syncId,
    status: runStatusOf(run),
    sync_config_id: run.configId,
    trigger_id: run.triggerId,
    project_id: run.projectId,
    user_email: run.userEmail,
    instructions: run.instructions,
    since: run.since,
    created_at: formatOffsetIso(run.createdAtMs),
  };
}

export function runListItem(run: RunRecord) {
  return {
    ...runHeader(run),
    sources: run.sources.map((s) => ({ ...sourceIdentity(s), task_id: s.taskId, status: s.status })),
  };
}

export function runDetail(state: SimState, run: RunRecord) {
  return {
    ...runHeader(run),
    sources: run.sources.map((s) => ({
      ...sourceIdentity(s),
      resolved_by: "explicit",
      config_warnings: configWarningsOf(s),
      task_id: s.taskId,
      session_id: s.sessionId,
      status: s.status,
      started_at: s.startedAtMs === null ? null : formatOffsetIso(s.startedAtMs),
      completed_at: s.completedAtMs === null ? null : formatOffsetIso(s.completedAtMs),
      error: s.error,
      summary: summaryOf(state, s),
    })),
  };
}
