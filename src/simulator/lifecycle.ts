/** How runs move: PENDING -> RUNNING -> COMPLETED / INCOMPLETE / FAILED, one step at a time. */
import { MAX_TEXT_CHARS, overTextLimit } from "./configs.js";
import { HttpError, invalid, requireObject } from "./http-error.js";
import { collectSnapshot } from "./snapshot.js";
import { isFinished, type RunRecord, type SimState, type SourceRecord } from "./state.js";

const DEFAULT_FAILURE = "The upstream server returned 502 for every tool call.";
const DEFAULT_INCLUDE_FRACTION = 0.5;

/** A run was read (list, detail or export): in on-poll mode each unfinished source moves one step. */
export function observeRun(state: SimState, run: RunRecord): void {
  if (state.lifecycle === "on-poll" && !state.held) stepRun(state, run);
}

/** Moves every unfinished source of the run (or only `label`) one step. */
export function stepRun(state: SimState, run: RunRecord, label?: string): void {
  for (const source of run.sources) {
    if (label === undefined || source.label === label) stepSource(state, run, source);
  }
}

export function stepSource(state: SimState, run: RunRecord, source: SourceRecord): void {
  if (source.status === "PENDING") {
    source.status = "RUNNING";
    source.startedAtMs = state.clock.tick();
    source.sessionId = state.newPassId();
  } else if (source.status === "RUNNING") {
    finishSource(state, run, source);
  }
}

/** Decides how the source ends (setOutcome rules, else COMPLETED) and fixes what it collected. */
function finishSource(state: SimState, run: RunRecord, source: SourceRecord): void {
  const outcome = state.takeOutcome(run, source) ?? { task: "COMPLETED" as const };
  const at = state.clock.tick();
  source.status = outcome.task;
  source.completedAtMs = at;
  source.forcedExportStatus = outcome.exportStatus ?? null;
  if (outcome.task === "FAILED") {
    source.error = outcome.error ?? DEFAULT_FAILURE;
    source.snapshot = null;
    return;
  }
  // A source that did not fail may still carry the service's text (why it stopped early): the run
  // detail serves whatever the outcome said, so a test can give an INCOMPLETE source its words.
  source.error = outcome.error ?? null;
  const fraction = outcome.task === "INCOMPLETE" ? (outcome.includeFraction ?? DEFAULT_INCLUDE_FRACTION) : 1;
  source.snapshot = collectSnapshot(state, run, source, fraction, at);
}

/** POST /sync-task/{id}/continue: sends INCOMPLETE sources (or the named one) back to RUNNING. */
export function continueRun(state: SimState, run: RunRecord, body: unknown): void {
  const { message, source: label } = parseContinueBody(body);
  let targets: SourceRecord[];
  if (label !== undefined) {
    const source = findSource(run, label);
    if (!isFinished(source.status)) throw new HttpError(409, `source ${label} is still running`);
    if (source.status === "FAILED")
      throw new HttpError(409, `source ${label} failed and cannot be continued`);
    if (source.status !== "INCOMPLETE") throw new HttpError(409, `source ${label} has nothing to continue`);
    targets = [source];
  } else {
    targets = run.sources.filter((s) => s.status === "INCOMPLETE");
    if (targets.length === 0) {
      const running = run.sources.some((s) => !isFinished(s.status));
      throw new HttpError(409, running ? "the run is still running" : "the run has nothing to continue");
    }
  }
  const at = state.clock.tick();
  for (const source of targets) {
    source.continues.push({ message, atMs: at, finishedAtMs: source.completedAtMs ?? at });
    source.status = "RUNNING";
    source.completedAtMs = null;
    source.error = null;
    source.snapshot = null;
    source.forcedExportStatus = null;
  }
}

/** The run's source with this label; 400 naming the run's labels otherwise. */
export function findSource(run: RunRecord, label: string): SourceRecord {
  const source = run.sources.find((s) => s.label === label);
  if (source) return source;
  const labels = run.sources.map((s) => s.label).join(", ");
  throw new HttpError(400, `unknown source "${label}"; this run has: ${labels}`);
}

function parseContinueBody(body: unknown): { message: string; source: string | undefined } {
  const { message, source } = requireObject(body);
  if (typeof message !== "string") throw invalid(["body", "message"], "Field required", "missing");
  if (message.trim() === "") throw invalid(["body", "message"], "String should have at least 1 character");
  if (overTextLimit(message)) throw new HttpError(400, `message exceeds ${MAX_TEXT_CHARS} characters`);
  if (source !== undefined && source !== null && typeof source !== "string") {
    throw invalid(["body", "source"], "Input should be a valid string");
  }
  return { message, source: typeof source === "string" ? source : undefined };
}
