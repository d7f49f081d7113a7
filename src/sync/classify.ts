/**
 * What a pass that stopped on an upstream error reports (docs/reference/sync-semantics.md#outcomes), and
 * whether its trigger stays in flight for the next pass to resume.
 */
import { WRONG_BASE_URL_ADVICE } from "../api/base-url.js";
import {
  ApiError,
  BadRequestError,
  CannotStartError,
  FeatureDisabledError,
  NotFoundError,
  type SyncmirrorError,
  UnauthorizedError,
} from "../errors.js";
import type { Trigger } from "../store/types.js";
import type { BoundMirror } from "./context.js";
import type { Outcome } from "./outcome.js";

/**
 * Refusals close the trigger; anything that may pass (network, token, 5xx, a lost POST) keeps it
 * in flight, so the next pass resumes or adopts it instead of triggering again.
 */
export function classifyFailure(
  error: SyncmirrorError,
  mirror: BoundMirror,
  trigger: Trigger,
  /** A 404 on every route, not only this config's: `api.base_url` is wrong (`api/base-url.ts`). */
  baseUrlWrong = false,
): {
  outcome: Outcome;
  keepInFlight: boolean;
  message: string;
  /** The mirror's declared config is gone upstream (a 404 before any run): `apply` creates it again. */
  declaredGone?: boolean;
} {
  const beforeRuns = trigger.state === "intent";
  if (error instanceof FeatureDisabledError) {
    return { outcome: "refused", keepInFlight: !beforeRuns, message: error.message };
  }
  if (beforeRuns && (error instanceof CannotStartError || error instanceof BadRequestError)) {
    return { outcome: "refused", keepInFlight: false, message: `trigger refused: ${error.message}` };
  }
  if (baseUrlWrong) return { outcome: "failed", keepInFlight: false, message: WRONG_BASE_URL_ADVICE };
  if (beforeRuns && error instanceof NotFoundError) {
    return {
      outcome: "failed",
      keepInFlight: false,
      declaredGone: mirror.declared !== null,
      message: mirror.declared
        ? `sync config ${mirror.syncConfigId} ("${mirror.declared.name}", declared by ${mirror.name}) was not found upstream: run \`syncmirror apply\` to create it again`
        : `sync config ${mirror.syncConfigId} was not found upstream: check mirrors[].sync_config_id for ${mirror.name}`,
    };
  }
  if (error instanceof UnauthorizedError) {
    return { outcome: "failed", keepInFlight: true, message: error.message };
  }
  return {
    outcome: "failed",
    keepInFlight: true,
    message: `${error.message}; the trigger stays in flight and the next pass resumes it`,
  };
}

/**
 * The `err` of the log line that reports the failure: the error's own text, unless the pass blames
 * the base URL, where a 404's advice to check the sync config id would contradict the message.
 */
export function describeFailureCause(error: SyncmirrorError, baseUrlWrong: boolean): string {
  if (!baseUrlWrong || !(error instanceof ApiError)) return error.message;
  return `${error.method} ${error.route} answered 404, and so does GET /projects: api.base_url is wrong, not the sync config id`;
}
