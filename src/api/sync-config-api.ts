/**
 * The sync config calls `plan` and `apply` make (docs/reference/upstream-api.md#calls): read, list, create, replace,
 * delete, each through the one transport (retries, `Retry-After`, typed errors).
 *
 * A create is not idempotent, so it is retried only when the service proves it did nothing (429,
 * 503); anything that may have created the config throws CreateOutcomeUnknownError, and the caller
 * looks the name up before creating again. A replace sends every field, so repeating it leaves the
 * same config: it is retried like a read. A delete repeated after a lost answer finds nothing
 * (404), which is what it wanted.
 */
import { type ApiErrorFields, CreateOutcomeUnknownError, NotFoundError } from "../errors.js";
import { paged } from "./paged.js";
import { isRefusedBeforeWork } from "./retry.js";
import { routes } from "./routes.js";
import * as S from "./schemas.js";
import type { Transport, UnsafeCall } from "./transport.js";

/** The fields a create or replace sends: every one, each time. */
export interface SyncConfigFields {
  name: string;
  instructions: string;
  server_instance_ids: string[];
  all_users: boolean;
  user_emails: string[];
}

export interface SyncConfigApi {
  getSyncConfig(id: string, signal?: AbortSignal): Promise<S.SyncConfig>;
  /**
   * Every config of the project, newest first, 100 per request; stop iterating to stop fetching.
   * Each by id and name only: `getSyncConfig` reads what one holds.
   */
  listSyncConfigs(projectId: string, signal?: AbortSignal): AsyncIterable<S.SyncConfigListItem>;
  /** 409 NameTakenError, 404 no such project, 400 BadRequestError naming the bad server or user. */
  createSyncConfig(
    body: SyncConfigFields & { project_id: string },
    signal?: AbortSignal,
  ): Promise<S.SyncConfig>;
  /** Replaces every field; only future triggers see the change (runs started keep theirs). */
  replaceSyncConfig(id: string, body: SyncConfigFields, signal?: AbortSignal): Promise<S.SyncConfig>;
  /** False when there was nothing to delete (404). */
  deleteSyncConfig(id: string, signal?: AbortSignal): Promise<boolean>;
}

const CONFIG_PAGE_SIZE = 100;

const createIsUnsafe: UnsafeCall = {
  retryStatus: isRefusedBeforeWork,
  outcomeUnknown: (reason: string, fields: ApiErrorFields, cause?: unknown) =>
    new CreateOutcomeUnknownError(
      `POST /sync-configs may have reached the service but gave no usable answer (${reason}): the config may exist, so it is not repeated; look it up by name first`,
      fields,
      { cause },
    ),
};

export function createSyncConfigApi(request: Transport["request"]): SyncConfigApi {
  return {
    getSyncConfig: (id, signal) =>
      request({ method: "GET", route: routes.syncConfig, params: { id }, schema: S.SyncConfig, signal }),

    listSyncConfigs: (projectId, signal) =>
      paged(routes.syncConfigs, (cursor) =>
        request({
          method: "GET",
          route: routes.syncConfigs,
          query: { project_id: projectId, size: CONFIG_PAGE_SIZE, cursor },
          schema: S.SyncConfigPage,
          signal,
        }),
      ),

    createSyncConfig: (body, signal) =>
      request({
        method: "POST",
        route: routes.syncConfigs,
        body,
        schema: S.SyncConfig,
        unsafe: createIsUnsafe,
        signal,
      }),

    replaceSyncConfig: (id, body, signal) =>
      request({
        method: "PUT",
        route: routes.syncConfig,
        params: { id },
        body,
        schema: S.SyncConfig,
        signal,
      }),

    async deleteSyncConfig(id, signal) {
      try {
        await request<void>({ method: "DELETE", route: routes.syncConfig, params: { id }, signal });
        return true;
      } catch (error) {
        if (error instanceof NotFoundError) return false;
        throw error;
      }
    },
  };
}
