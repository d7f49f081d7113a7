/**
 * Operators' controls (docs/console-history.md): pause, resume and trigger, stored in the database so
 * that whichever replica runs the mirror obeys them, each recorded with who gave it and when. The
 * CLI verbs and the HTTP routes both call `applyControl` and answer with the same object.
 */
import { hostname, userInfo } from "node:os";
import { pauseSchedule, requestPass, resumeSchedule } from "./store/schedule-rules.js";
import type { Store, StoreOps } from "./store/store.js";
import type { ControlAction, Due, MirrorSchedule, Mode } from "./store/types.js";
import { aPass } from "./sync/pass-name.js";
import { pausedFields } from "./sync/status-report.js";

export interface ControlRequest {
  mirror: string;
  action: ControlAction;
  /** The mode a trigger asks for (incremental unless full). */
  mode?: Mode;
  /** Who gives it: `cliActor()` or `http <address>`. */
  actor: string;
  now: Date;
}

/** What `pause`, `resume` and `trigger` print with `--json`, and what their POST routes answer. */
export interface ControlReply {
  mirror: string;
  action: ControlAction;
  /** The mode asked for (trigger), else null. */
  mode: Mode | null;
  by: string;
  at: string;
  /** False when it changed nothing: already paused, or not paused. */
  changed: boolean;
  /** Whether the mirror is paused after this control; since when and by whom (else null). */
  paused: boolean;
  paused_since: string | null;
  paused_by: string | null;
  /** The pass due now, if any (after this control). */
  due: { mode: Mode; reason: Due["reason"]; since: string; by: string | null } | null;
  /** The process running the mirror's pass now (`hostname:pid`): a control never stops a running pass. */
  running_on: string | null;
  message: string;
}

/** The CLI's actor: the OS user and host. */
export function cliActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // A container user with no passwd entry.
    user = `uid ${process.getuid?.() ?? "?"}`;
  }
  return `${user}@${hostname()}`;
}

export async function applyControl(store: Store, request: ControlRequest): Promise<ControlReply> {
  const at = request.now.toISOString();
  const mode = request.action === "trigger" ? (request.mode ?? "incremental") : null;
  const { schedule, changed } = await store.transaction(async (tx) => {
    const current = (await tx.schedules.lock(request.mirror)) ?? fresh(request.mirror, at);
    const next = apply(current, request, mode, at);
    if (next) {
      await tx.schedules.save(next);
      await record(tx, request, mode, at);
    }
    return { schedule: next ?? current, changed: next !== null };
  });
  const runningOn = (await store.leases.holders()).get(request.mirror)?.holderName ?? null;
  return {
    mirror: request.mirror,
    action: request.action,
    mode,
    by: request.actor,
    at,
    changed,
    ...pausedFields(schedule.paused),
    due: schedule.due,
    running_on: runningOn,
    message: describe(request, schedule, changed, runningOn),
  };
}

/** A schedule no daemon has recorded yet: nothing owed before now. */
function fresh(mirror: string, at: string): MirrorSchedule {
  return { mirror, incrementalSlot: at, fullSlot: at, due: null, paused: null };
}

function apply(s: MirrorSchedule, r: ControlRequest, mode: Mode | null, at: string): MirrorSchedule | null {
  switch (r.action) {
    case "pause":
      return pauseSchedule(s, r.actor, at);
    case "resume":
      return resumeSchedule(s, at);
    case "trigger":
      return requestPass(s, mode ?? "incremental", r.actor, at);
  }
}

function record(tx: StoreOps, r: ControlRequest, mode: Mode | null, at: string): Promise<void> {
  return tx.controls.record({ mirror: r.mirror, action: r.action, mode, actor: r.actor, at });
}

function describe(r: ControlRequest, s: MirrorSchedule, changed: boolean, runningOn: string | null): string {
  const running = runningOn ? `; the pass running on ${runningOn} is not stopped: it finishes` : "";
  switch (r.action) {
    case "pause":
      return changed
        ? `paused ${r.mirror}: its scheduled passes are skipped until \`syncmirror resume --mirror ${r.mirror}\`${running}`
        : `${r.mirror} was already paused (since ${s.paused?.at} by ${s.paused?.by})${running}`;
    case "resume":
      return changed
        ? `resumed ${r.mirror}: its next scheduled time runs (times skipped while paused are not caught up)`
        : `${r.mirror} was not paused: nothing changed`;
    case "trigger": {
      const due = s.due as Due;
      const paused = s.paused ? ` ${r.mirror} is paused, but a requested pass runs anyway.` : "";
      const after = runningOn ? ` It follows the pass running on ${runningOn}.` : "";
      return `${aPass(due.mode)} of ${r.mirror} has been due since ${due.since}: the first replica with a free slot starts it.${paused}${after}`;
    }
  }
}
