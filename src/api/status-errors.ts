/**
 * The one table that turns a final, non-retryable HTTP status into a catalog error (STYLE
 * "Errors"). Retryable statuses (429, 5xx) never reach here unless a POST must not be repeated.
 */
import {
  type ApiError,
  type ApiErrorFields,
  BadRequestError,
  BadResponseError,
  CannotStartError,
  ConflictError,
  FeatureDisabledError,
  NameTakenError,
  NotFoundError,
  UnauthorizedError,
} from "../errors.js";
import { routes } from "./routes.js";

const DETAIL_MESSAGE_CHARS = 300;

/** The `detail` as one short line for a message (the full value stays on the error's `detail`). */
export function describeDetail(detail: unknown): string {
  let text: string | undefined;
  if (typeof detail === "string") text = detail;
  else if (
    detail &&
    typeof detail === "object" &&
    typeof (detail as { message?: unknown }).message === "string"
  ) {
    text = (detail as { message: string }).message;
  } else if (detail !== undefined && detail !== null) text = JSON.stringify(detail);
  text = text?.replace(/\s+/g, " ").trim();
  if (!text) return "";
  return text.length > DETAIL_MESSAGE_CHARS ? `${text.slice(0, DETAIL_MESSAGE_CHARS)}...` : text;
}

/**
 * Whether a 403/409 detail says the Background Sync premium feature is off. The status code for this
 * is undocumented (docs/reference/upstream-api.md#calls), so the detail text decides.
 */
export function isFeatureDisabledDetail(detail: unknown): boolean {
  const text = typeof detail === "string" ? detail : (JSON.stringify(detail) ?? "");
  if (/premium/i.test(text)) return true;
  return /feature|background[ _-]?sync/i.test(text) && /disabled|\boff\b|not enabled/i.test(text);
}

export interface StatusErrorInput extends ApiErrorFields {
  status: number;
  /** Name of the environment variable the token came from, for the 401/403 advice. */
  tokenEnv: string;
  /** A 3xx's Location, without its query. */
  redirectedTo?: string | undefined;
}

/** The catalog error for a final HTTP status; the message says what to do next. */
export function errorForStatus(input: StatusErrorInput): ApiError {
  const { method, route, status, detail, tokenEnv, redirectedTo } = input;
  const fields: ApiErrorFields = { method, route, status, detail };
  const where = `${method} ${route}`;
  const described = describeDetail(detail);
  const why = described ? `: ${described}` : "";
  if (status === 401) {
    return new UnauthorizedError(
      `the token in $${tokenEnv} was rejected (401 on ${where}): create a new platform access token and put it in $${tokenEnv}`,
      fields,
    );
  }
  if ((status === 403 || status === 409) && isFeatureDisabledDetail(detail)) {
    return new FeatureDisabledError(
      `Background Sync is turned off for this tenant (${status} on ${where}${why}): turn on Background Sync under Administration > Premium Features`,
      fields,
    );
  }
  if (status === 403) {
    return new UnauthorizedError(
      `the token in $${tokenEnv} may not call ${where} (403${why}): use a platform access token with admin rights over the workspace`,
      fields,
    );
  }
  if (status === 409 && method === "POST" && route === routes.syncTasks) {
    return new CannotStartError(
      `the service cannot start the sync (409${why}): nothing was started; resolve what the service says, then sync again`,
      fields,
    );
  }
  const writesConfig =
    (method === "POST" && route === routes.syncConfigs) || (method === "PUT" && route === routes.syncConfig);
  if (status === 409 && writesConfig) {
    return new NameTakenError(
      `${where}: another sync config of the project already has this name (409${why}): rename sync_config.name, or take that config over with \`syncmirror apply --adopt\``,
      fields,
    );
  }
  if (status === 409) {
    return new ConflictError(
      `${where} conflicts with the run's current state (409${why}): wait until the run or source has finished, then try again`,
      fields,
    );
  }
  if (status === 404 && route === routes.syncConfigs) {
    return new NotFoundError(
      `${where}: the project was not found (404${why}): check sync_config.project against \`GET /projects\``,
      fields,
    );
  }
  if (status === 404) {
    return new NotFoundError(
      `${where} was not found (404${why}): check the id (the sync_config_id in the config; a trigger_id passed as a sync_id also gives 404)`,
      fields,
    );
  }
  if (status >= 400 && status < 500 && writesConfig) {
    return new BadRequestError(
      `${where} was refused as invalid (${status}${why}): fix the mirror's sync_config in the config file`,
      fields,
    );
  }
  if (status >= 400 && status < 500) {
    return new BadRequestError(
      `${where} was refused as invalid (${status}${why}): fix the remote sync config or the request it describes`,
      fields,
    );
  }
  if (status >= 300 && status < 400 && redirectedTo) {
    // Following one would send the token to wherever the Location names.
    return new BadResponseError(
      `${where} was redirected (${status}) to ${redirectedTo}: redirects are not followed, so the token goes nowhere else; set api.base_url to the API's address there (with its /api/v1)`,
      fields,
    );
  }
  return new BadResponseError(
    `${where} answered with unexpected status ${status}${why}: check that api.base_url points at the service's /api/v1`,
    fields,
  );
}
