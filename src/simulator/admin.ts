/**
 * Test-infrastructure seam for a simulator running in another process (`syncmirror simulate`,
 * `npm run bench`): a few routes under `/_sim`, outside the API prefix, behind the same bearer
 * token. They are not part of the service's API (docs/reference/upstream-api.md): admin requests take no faults and are
 * not written to the request log, so the log stays what the client under test asked for.
 *
 * - `POST /_sim/docs/edit-random` `{fraction, seed?}`: edits that share of the live documents,
 *   picked at random (seeded, default 1), as `sim.docs.edit` does: a new version, so a new
 *   content_hash, and modified_at = now. Answers `{edited, live}`.
 * - `POST /_sim/docs/remove-random` `{fraction, seed?}`: removes that share of the live documents
 *   (as `sim.docs.remove`), so the next full snapshot misses their keys. Answers `{removed, live}`.
 * - `POST /_sim/outcomes` `{task, error?, user?, server_instance_id?, times?}`: how matching sources
 *   finish from now on, as `sim.setOutcome` does (`task` COMPLETED, INCOMPLETE or FAILED; `error` the
 *   text the run detail gives the source: a FAILED one's cause, an INCOMPLETE one's reason).
 *   Answers `{outcomes}`, the rules set so far.
 * - `POST /_sim/faults` `{route, kind, times?, retry_after_seconds?, retry_after_form?, ms?, field?,
 *   since?}`: the next `times` (default 1) requests to `route` ("GET /projects", a template as the
 *   request log names it, "GET /sync-task/{sync_id}/export", or "*" for any) misbehave, as
 *   `sim.faults.inject` does; the fields are faults.ts's `Fault` in snake_case. Answers `{faults}`,
 *   the pending ones as `GET /_sim/faults` lists them.
 * - `GET /_sim/faults`: the faults not yet used up, in injection order: `{faults: [{route,
 *   remaining, kind, ...}]}` (`remaining` null: unlimited).
 * - `DELETE /_sim/faults`: drops every pending fault and export quirk (204).
 * - `POST /_sim/premium` `{enabled, status?}`: Background Sync on or off, as `sim.setPremium`; off,
 *   create, replace and trigger are refused with `status` (403, the default, or 409). Answers
 *   `{enabled, status}`.
 * - `POST /_sim/cannot-start` `{detail}`: a string makes triggers answer 409 with that detail, as
 *   `sim.setCannotStart`; null lets them start again. Answers `{detail}`.
 * - `GET /_sim/requests`: the request log, oldest first, as `sim.requests` holds it: `{entries}`.
 * - `DELETE /_sim/requests`: clears the request log (204).
 */
import { z } from "zod";
import { docIdOf } from "./dataset.js";
import type { SimulatorDocs } from "./docs-api.js";
import type { Fault, FaultApi, PendingFault } from "./faults.js";
import { parseBody } from "./http-error.js";
import { createRandom, hash32 } from "./random.js";
import type { Route } from "./router.js";
import type { RequestLogEntry } from "./server.js";
import type { Outcome, OutcomeMatch, SimState } from "./state.js";

export interface AdminDeps {
  state: SimState;
  docs: SimulatorDocs;
  requests: RequestLogEntry[];
  faults: FaultApi;
  /** The API's routes, so a fault for a route that does not exist is refused rather than never firing. */
  apiRoutes: readonly Route[];
}

export function createAdminRoutes({ state, docs, requests, faults, apiRoutes }: AdminDeps): Route[] {
  const faultRoute = faultRouteSchema(apiRoutes.map((r) => `${r.method} ${r.template}`));
  return [
    {
      method: "POST",
      template: "/docs/edit-random",
      handler: ({ body }) => {
        const { picked, live } = pickRandom(state, body, "edit-random");
        for (const index of picked) docs.edit(docIdOf(index));
        return { status: 200, body: { edited: picked.length, live } };
      },
    },
    {
      method: "POST",
      template: "/docs/remove-random",
      handler: ({ body }) => {
        const { picked, live } = pickRandom(state, body, "remove-random");
        for (const index of picked) docs.remove(docIdOf(index));
        return { status: 200, body: { removed: picked.length, live } };
      },
    },
    {
      method: "POST",
      template: "/outcomes",
      handler: ({ body }) => {
        const { match, outcome } = parseOutcome(body);
        state.outcomes.push({ match, outcome, left: outcome.times ?? Number.POSITIVE_INFINITY });
        return { status: 200, body: { outcomes: state.outcomes.length } };
      },
    },
    {
      method: "POST",
      template: "/faults",
      handler: ({ body }) => {
        const { route } = parseBody(faultRoute, body);
        faults.inject(route, parseBody(faultBody, body));
        return { status: 200, body: { faults: faults.pending().map(pendingView) } };
      },
    },
    {
      method: "GET",
      template: "/faults",
      handler: () => ({ status: 200, body: { faults: faults.pending().map(pendingView) } }),
    },
    {
      method: "DELETE",
      template: "/faults",
      handler: () => {
        faults.clear();
        return { status: 204 };
      },
    },
    {
      method: "POST",
      template: "/premium",
      handler: ({ body }) => {
        const { enabled, status } = parseBody(premiumBody, body);
        state.setPremium(enabled, status);
        return { status: 200, body: { enabled, status: state.premiumRefusalStatus } };
      },
    },
    {
      method: "POST",
      template: "/cannot-start",
      handler: ({ body }) => {
        const { detail } = parseBody(cannotStartBody, body);
        state.cannotStart = detail;
        return { status: 200, body: { detail } };
      },
    },
    {
      method: "GET",
      template: "/requests",
      handler: () => ({ status: 200, body: { entries: requests } }),
    },
    {
      method: "DELETE",
      template: "/requests",
      handler: () => {
        requests.length = 0;
        return { status: 204 };
      },
    },
  ];
}

/** A seeded uniform sample, without repeats, of `fraction` of the live documents. */
function pickRandom(state: SimState, body: unknown, salt: string): { picked: number[]; live: number } {
  const { fraction, seed } = parseEditRandom(body);
  const live: number[] = [];
  for (let index = 0; index < state.dataset.count; index++) {
    if (state.dataset.deleted[index] !== 1) live.push(index);
  }
  const count = Math.min(live.length, Math.round(fraction * live.length));
  const random = createRandom(hash32(seed, salt));
  // Partial Fisher-Yates: the first `count` slots end up a uniform sample without repeats.
  for (let i = 0; i < count; i++) {
    const j = random.int(i, live.length);
    const picked = live[j] ?? 0;
    live[j] = live[i] ?? 0;
    live[i] = picked;
  }
  return { picked: live.slice(0, count), live: live.length };
}

const editRandomBody = z.object({
  fraction: z.number().min(0).max(1),
  seed: z.number().int().default(1),
});

function parseEditRandom(body: unknown): { fraction: number; seed: number } {
  return parseBody(editRandomBody, body);
}

const outcomeBody = z.object({
  task: z.enum(["COMPLETED", "INCOMPLETE", "FAILED"]),
  error: z.string().optional(),
  user: z.string().optional(),
  server_instance_id: z.string().optional(),
  times: z.number().int().positive().optional(),
});

function parseOutcome(body: unknown): { match: OutcomeMatch; outcome: Outcome } {
  const { task, error, user, server_instance_id, times } = parseBody(outcomeBody, body);
  const match: OutcomeMatch = {};
  if (user !== undefined) match.user = user;
  if (server_instance_id !== undefined) match.server_instance_id = server_instance_id;
  return {
    match,
    outcome: {
      task,
      ...(error === undefined ? {} : { error }),
      ...(times === undefined ? {} : { times }),
    },
  };
}

const premiumBody = z.object({
  enabled: z.boolean(),
  status: z.union([z.literal(403), z.literal(409)]).optional(),
});

const cannotStartBody = z.object({ detail: z.string().min(1).nullable() });

/** The `route` of a `POST /_sim/faults` body: "*" or a route of the API, as the request log names it. */
function faultRouteSchema(routes: readonly string[]) {
  const known = new Set(["*", ...routes]);
  return z.object({
    route: z.string().refine((r) => known.has(r), {
      error: `Input should be "*" or a route as the request log names it: ${routes.join(", ")}`,
    }),
  });
}

const times = z.number().int().positive().optional();

/** The fault of a `POST /_sim/faults` body, in the request's snake_case, read as a `Fault`. */
const faultBody = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.enum(["429", "500", "502", "503"]),
      retry_after_seconds: z.number().int().nonnegative().optional(),
      retry_after_form: z.enum(["seconds", "http-date"]).optional(),
      times,
    })
    .transform(({ retry_after_seconds, retry_after_form, ...rest }) => ({
      ...rest,
      retryAfterSeconds: retry_after_seconds,
      retryAfterForm: retry_after_form,
    })),
  z.object({
    kind: z.enum(["401", "reset", "malformed", "extra-fields", "light-items", "drop-after", "not-finished"]),
    times,
  }),
  z.object({ kind: z.literal("delay"), ms: z.number().int().nonnegative(), times }),
  z.object({
    kind: z.literal("missing-field"),
    field: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    times,
  }),
  z.object({ kind: z.literal("date-filtered"), since: z.string().min(1), times }),
]) satisfies z.ZodType<Fault>;

/** A pending fault as the admin routes speak: snake_case, `remaining` instead of `times`. */
function pendingView({ route, fault, remaining }: PendingFault) {
  const fields = Object.entries(fault)
    .filter(([key, value]) => key !== "times" && value !== undefined)
    .map(([key, value]) => [key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]);
  // JSON has no Infinity: a fault injected in-process for good shows null.
  return { route, remaining: Number.isFinite(remaining) ? remaining : null, ...Object.fromEntries(fields) };
}
