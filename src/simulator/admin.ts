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
 * - `GET /_sim/requests`: the request log, oldest first, as `sim.requests` holds it: `{entries}`.
 * - `DELETE /_sim/requests`: clears the request log (204).
 */
import { docIdOf } from "./dataset.js";
import type { SimulatorDocs } from "./docs-api.js";
import { invalid, requireObject } from "./http-error.js";
import { createRandom, hash32 } from "./random.js";
import type { Route } from "./router.js";
import type { RequestLogEntry } from "./server.js";
import type { Outcome, OutcomeMatch, SimState } from "./state.js";

export function createAdminRoutes(
  state: SimState,
  docs: SimulatorDocs,
  requests: RequestLogEntry[],
): Route[] {
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

function parseEditRandom(body: unknown): { fraction: number; seed: number } {
  const { fraction, seed = 1 } = requireObject(body);
  if (typeof fraction !== "number" || !(fraction >= 0 && fraction <= 1)) {
    throw invalid(["body", "fraction"], "Input should be a number from 0 to 1", "value_error", fraction);
  }
  if (typeof seed !== "number" || !Number.isInteger(seed)) {
    throw invalid(["body", "seed"], "Input should be a valid integer", "int_type", seed);
  }
  return { fraction, seed };
}

const TASKS: readonly Outcome["task"][] = ["COMPLETED", "INCOMPLETE", "FAILED"];

function parseOutcome(body: unknown): { match: OutcomeMatch; outcome: Outcome } {
  const { task, error, user, server_instance_id, times } = requireObject(body);
  if (!TASKS.includes(task as Outcome["task"]))
    throw invalid(["body", "task"], `Input should be one of ${TASKS.join(", ")}`, "enum", task);
  const text = (name: string, value: unknown): string | undefined => {
    if (value === undefined || typeof value === "string") return value;
    throw invalid(["body", name], "Input should be a valid string", "string_type", value);
  };
  if (times !== undefined && !(typeof times === "number" && Number.isInteger(times) && times > 0))
    throw invalid(["body", "times"], "Input should be a positive integer", "int_type", times);
  const match: OutcomeMatch = {};
  const who = text("user", user);
  const where = text("server_instance_id", server_instance_id);
  if (who !== undefined) match.user = who;
  if (where !== undefined) match.server_instance_id = where;
  const said = text("error", error);
  return {
    match,
    outcome: {
      task: task as Outcome["task"],
      ...(said === undefined ? {} : { error: said }),
      ...(times === undefined ? {} : { times: times as number }),
    },
  };
}
