/**
 * The upstream API client (docs/reference/upstream-api.md#calls): one method per operation the mirror uses, each
 * body validated by schemas.ts on arrival. Retries, timeouts, status mapping and metrics live in
 * transport.ts; the retry table in retry.ts.
 */
import type { Dispatcher } from "undici";
import { type ApiErrorFields, ContinueOutcomeUnknownError, TriggerOutcomeUnknownError } from "../errors.js";
import { parseExportPageText } from "../exact-json.js";
import type { Logger } from "../log.js";
import { paged } from "./paged.js";
import { DEFAULT_BACKOFF, isRefusedBeforeWork, isRetryableStatus } from "./retry.js";
import { routes } from "./routes.js";
import * as S from "./schemas.js";
import { createSyncConfigApi, type SyncConfigApi } from "./sync-config-api.js";
import { createTransport, type RetriedBy, serviceText, type UnsafeCall } from "./transport.js";

export interface ApiClientOptions {
  /** Includes the `/api/v1` prefix. */
  baseUrl: string;
  token: string;
  /** Name of the environment variable the token came from, for error advice (default SYNCMIRROR_API_TOKEN). */
  tokenEnv?: string;
  /** Per attempt, headers and body together. */
  timeoutMs: number;
  /** Total attempts per request, with backoff on 429 / 5xx / network errors / timeouts. */
  maxAttempts: number;
  /** Who tries again after the last attempt failed: the next pass, or the operator (a one-shot command). */
  retriedBy: RetriedBy;
  log: Logger;
  /** Called once per HTTP attempt, for metrics: route is templated, never with ids; code is the status or "error". */
  onRequest?: (r: { method: string; route: string; code: string; durationSeconds: number }) => void;
  /** Defaults: 500 ms base, 30 s cap, exponential with full jitter. */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Injectable for tests; [0, 1). */
  random?: () => number;
  /** Injectable for tests; must reject (or resolve) promptly when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A MockAgent in tests; by default the client owns one undici Agent, closed by `close()`. */
  dispatcher?: Dispatcher;
}

export interface RunQuery {
  trigger_id?: string;
  sync_config_id?: string;
}

/** For the POSTs that are never repeated blindly (trigger, continue): see `UnsafeCall`. */
export type PostHooks = Pick<UnsafeCall, "beforeAttempt">;

export interface ApiClient extends SyncConfigApi {
  /** Every user of the config, across all pages. */
  listAccess(id: string, signal?: AbortSignal): Promise<S.AccessItem[]>;
  listSources(projectId: string, signal?: AbortSignal): Promise<S.SyncableSource[]>;
  listProjects(signal?: AbortSignal): Promise<S.Project[]>;
  /**
   * Not idempotent: retried only on 429/503 (refused before any work) and connection failures
   * before sending. Anything that may have reached the service without a usable answer throws
   * TriggerOutcomeUnknownError: adopt the runs from the run list instead of triggering again.
   */
  trigger(
    body: { sync_config_id: string; since?: string },
    signal?: AbortSignal,
    hooks?: PostHooks,
  ): Promise<S.TriggerResponse>;
  /** One page, newest first. */
  listRuns(
    query: RunQuery & { size?: number; cursor?: string },
    signal?: AbortSignal,
  ): Promise<S.RunListPage>;
  /** Every run, newest first, 100 per request; stop iterating to stop fetching. */
  listAllRuns(query: RunQuery, signal?: AbortSignal): AsyncIterable<S.RunListItem>;
  getRun(syncId: string, signal?: AbortSignal): Promise<S.RunDetail>;
  /**
   * 409 (ConflictError, `detail` per ExportNotReadyDetail) until the run or source has finished.
   * `onThrottled` hears of each 429 (which is retried) so the caller can fetch fewer pages ahead.
   */
  getExportPage(
    syncId: string,
    query: { offset: number; limit: number; source?: string },
    signal?: AbortSignal,
    hooks?: { onThrottled?: () => void },
  ): Promise<S.ExportPage>;
  /** Retried on 429/5xx; a failure that may have delivered the message throws ContinueOutcomeUnknownError. */
  continueRun(
    syncId: string,
    body: { message: string; source?: string },
    signal?: AbortSignal,
    hooks?: PostHooks,
  ): Promise<void>;
  getTranscriptPage(
    syncId: string,
    query: { source?: string; cursor?: string; limit?: number },
    signal?: AbortSignal,
  ): Promise<S.TranscriptPage>;
  /** Closes the client's own connection pool (not an injected dispatcher). Idempotent. */
  close(): Promise<void>;
}

const RUN_PAGE_SIZE = 100;

const triggerIsUnsafe: UnsafeCall = {
  retryStatus: isRefusedBeforeWork,
  outcomeUnknown: (reason: string, fields: ApiErrorFields, cause?: unknown, abandoned?: boolean) =>
    new TriggerOutcomeUnknownError(
      `POST /sync-task may have reached the service but gave no usable answer (${reason}): runs may have been created, so it is not repeated blindly: the runs the run list shows for this sync config are adopted, and the trigger is sent again only if it shows none`,
      fields,
      { cause, abandoned: abandoned ?? false },
    ),
};

const continueIsUnsafe: UnsafeCall = {
  retryStatus: isRetryableStatus,
  outcomeUnknown: (reason: string, fields: ApiErrorFields, cause?: unknown) =>
    new ContinueOutcomeUnknownError(
      `the continue message may have reached the service but got no usable answer (${reason}): it is not repeated; read the run to see whether the source is running again before sending another`,
      fields,
      { cause },
    ),
};

export function createApiClient(options: ApiClientOptions): ApiClient {
  const { request, close } = createTransport({
    baseUrl: options.baseUrl,
    token: options.token,
    tokenEnv: options.tokenEnv ?? "SYNCMIRROR_API_TOKEN",
    timeoutMs: options.timeoutMs,
    maxAttempts: Math.max(1, Math.floor(options.maxAttempts)),
    retriedBy: options.retriedBy,
    log: options.log,
    onRequest: options.onRequest,
    backoff: {
      baseMs: options.backoff?.baseMs ?? DEFAULT_BACKOFF.baseMs,
      maxMs: options.backoff?.maxMs ?? DEFAULT_BACKOFF.maxMs,
    },
    random: options.random ?? Math.random,
    sleep: options.sleep,
    dispatcher: options.dispatcher,
  });

  const listRuns: ApiClient["listRuns"] = (query, signal) =>
    request({
      method: "GET",
      route: routes.syncTasks,
      query: {
        trigger_id: query.trigger_id,
        sync_config_id: query.sync_config_id,
        size: query.size,
        cursor: query.cursor,
      },
      schema: S.RunListPage,
      signal,
    });

  return {
    ...createSyncConfigApi(request),

    async listAccess(id, signal) {
      const items: S.AccessItem[] = [];
      const pages = paged(routes.syncConfigAccess, (cursor) =>
        request({
          method: "GET",
          route: routes.syncConfigAccess,
          params: { id },
          query: { cursor },
          schema: S.AccessPage,
          signal,
        }),
      );
      for await (const item of pages) items.push(item);
      return items;
    },

    async listSources(projectId, signal) {
      const body = await request({
        method: "GET",
        route: routes.syncableSources,
        query: { project_id: projectId },
        schema: S.SyncableSources,
        signal,
      });
      return body.sources;
    },

    listProjects: (signal) => request({ method: "GET", route: routes.projects, schema: S.Projects, signal }),

    trigger: (body, signal, hooks) =>
      request({
        method: "POST",
        route: routes.syncTasks,
        // The endpoint accepts only these fields: send nothing else.
        body:
          body.since === undefined
            ? { sync_config_id: body.sync_config_id }
            : { sync_config_id: body.sync_config_id, since: body.since },
        schema: S.TriggerResponse,
        unsafe: { ...triggerIsUnsafe, ...hooks },
        signal,
      }),

    listRuns,

    listAllRuns: (query, signal) =>
      paged(routes.syncTasks, (cursor) => listRuns({ ...query, size: RUN_PAGE_SIZE, cursor }, signal)),

    getRun: async (syncId, signal) => {
      const detail = await request({
        method: "GET",
        route: routes.run,
        params: { sync_id: syncId },
        schema: S.RunDetail,
        signal,
      });
      // A source's error is kept in the history and the problems: never the token it may echo.
      const sources = detail.sources.map((s) =>
        typeof s.error === "string" ? { ...s, error: serviceText(s.error, options.token) } : s,
      );
      return { ...detail, sources };
    },

    getExportPage: (syncId, query, signal, hooks) =>
      request({
        method: "GET",
        route: routes.runExport,
        params: { sync_id: syncId },
        query: { source: query.source, offset: query.offset, limit: query.limit },
        schema: S.ExportPage,
        parse: parseExportPageText,
        signal,
        onThrottled: hooks?.onThrottled,
      }),

    continueRun: (syncId, body, signal, hooks) =>
      request<void>({
        method: "POST",
        route: routes.runContinue,
        params: { sync_id: syncId },
        body:
          body.source === undefined
            ? { message: body.message }
            : { message: body.message, source: body.source },
        unsafe: { ...continueIsUnsafe, ...hooks },
        signal,
      }),

    getTranscriptPage: (syncId, query, signal) =>
      request({
        method: "GET",
        route: routes.runTranscript,
        params: { sync_id: syncId },
        query: { source: query.source, cursor: query.cursor, limit: query.limit },
        schema: S.TranscriptPage,
        signal,
      }),

    close,
  };
}
