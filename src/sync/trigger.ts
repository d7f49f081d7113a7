/**
 * Starting a trigger, or adopting the runs of one whose POST got no response (docs/reference/sync-semantics.md#one-trigger-per-mirror). The intent row is written before the POST so a crash leaves a trace.
 */
import type { RunListItem, TriggerResponse } from "../api/schemas.js";
import { TriggerOutcomeUnknownError } from "../errors.js";
import { consumeDue } from "../store/schedule-rules.js";
import type { StoreOps } from "../store/store.js";
import type { Due, Mode, NewRun, Trigger } from "../store/types.js";
import type { MirrorPass, SyncContext } from "./context.js";
import { passError } from "./fail-run.js";
import { fencedPost } from "./fence.js";
import type { Plan } from "./plan.js";
import { exportTime, serverTime } from "./time.js";

/** `knownBefore`: the mirror's newest known run (`runs.newestCreatedAt`), read before the intent. */
export async function recordIntent(
  { mirror, ctx, options }: MirrorPass,
  plan: Plan,
  knownBefore: string | null,
): Promise<Trigger> {
  const intentAt = ctx.now().toISOString();
  ctx.crashPoint("before-intent");
  const intent = await ctx.store.transaction(async (tx) => {
    const due = options.servesDue ? await takeDue(tx, mirror.name, plan.mode) : null;
    return tx.triggers.createIntent({
      mirror: mirror.name,
      mode: plan.mode,
      since: plan.since,
      knownBefore,
      intentAt,
      allowMassDelete: options.allowMassDelete,
      dryRun: options.dryRun && plan.mode === "full",
      startedBy: ctx.replica?.id ?? null,
      startedByName: ctx.replica?.name ?? null,
      dueAt: due?.since ?? null,
      dueReason: due?.reason ?? null,
    });
  });
  ctx.crashPoint("after-intent");
  return intent;
}

/** The due this pass covers, off the schedule (a due full stays for a full pass). */
async function takeDue(tx: StoreOps, mirror: string, mode: Mode): Promise<Due | null> {
  const schedule = await tx.schedules.lock(mirror);
  const taken = schedule && consumeDue(schedule, mode);
  if (!taken) return null;
  await tx.schedules.save(taken.schedule);
  return taken.due;
}

/**
 * Turns an intent into an active trigger: adopts orphaned runs if a previous POST created some,
 * else POSTs. A POST whose outcome is unknown (reset, timeout, gateway 5xx, unreadable answer) is
 * followed, after one poll interval (the run list may lag the POST), by a read of the run list:
 * its runs are adopted if it created any. The service starts every run of a trigger or none, so a
 * list without them means nothing started (unless the POST timed out: the service may still be
 * handling it, and the pass fails with the trigger in flight), and the trigger is POSTed once more in the same pass;
 * if that answer is lost too and the list still shows nothing, the pass fails with the trigger in
 * flight and the next pass reads the list again before triggering.
 */
export async function establishTrigger(
  pass: MirrorPass,
  intent: Trigger,
  resumed: boolean,
): Promise<Trigger> {
  const { ctx, mirror } = pass;
  const adopted = resumed ? await adoptOrphans(pass, intent) : null;
  if (adopted) return adopted;
  for (let post = 1; ; post++) {
    try {
      return await postTrigger(pass, intent);
    } catch (error) {
      if (!(error instanceof TriggerOutcomeUnknownError)) throw error;
      // An error met, though the pass may recover from it: the pass's history keeps it.
      await ctx.store.history.addErrors(intent.id, [passError(ctx, error.message)]);
      ctx.log.warn(
        { err: error.message, post, grace_seconds: mirror.pollInitialSeconds },
        "trigger POST got no usable response; reading the run list for the runs it may have created",
      );
      await ctx.sleep(mirror.pollInitialSeconds * 1000, ctx.signal);
      const orphans = await adoptOrphans(pass, intent);
      if (orphans) return orphans;
      if (error.abandoned) {
        // Only this process gave up: the service may list the runs of that POST later.
        throw new TriggerOutcomeUnknownError(
          "POST /sync-task timed out (api.timeout_seconds) and the run list shows no run of it yet: the service may still be starting its runs, so it is not POSTed again in this pass; the next pass looks for them before triggering",
          error,
          { cause: error },
        );
      }
      if (post >= ctx.triggerPosts) {
        throw new TriggerOutcomeUnknownError(
          `POST /sync-task got no usable answer ${post} times (each may have reached the service; the last: ${error.status ?? "no response"}) and the run list shows no run of any`,
          error,
          { cause: error },
        );
      }
      ctx.log.warn(
        { post },
        "the run list shows no run of that trigger: the service starts every run or none, so it started nothing; triggering once more",
      );
    }
  }
}

async function postTrigger({ mirror, ctx }: MirrorPass, intent: Trigger): Promise<Trigger> {
  const response = await ctx.api.trigger(
    { sync_config_id: mirror.syncConfigId, ...(intent.since ? { since: intent.since } : {}) },
    ctx.signal,
    fencedPost(ctx),
  );
  ctx.crashPoint("after-trigger-post");
  const active = await activate(
    ctx,
    intent,
    {
      triggerId: response.trigger_id,
      ...skippedOf(response),
      adopted: false,
      startedAt: ctx.now().toISOString(),
    },
    response.runs.map((r) => ({
      syncId: r.sync_id,
      userEmail: r.user_email,
      status: "pending",
      createdAt: null,
    })),
  );
  ctx.log.info(
    {
      trigger_id: response.trigger_id,
      runs: response.runs.length,
      skipped: response.skipped_count ?? null,
      since: intent.since,
    },
    "triggered",
  );
  return active;
}

/** A trigger's answer lists at most the first 100 pairs it skipped (docs/reference/upstream-api.md). */
const SKIPPED_LISTED_AT_MOST = 100;

/**
 * The answer's skipped pairs as `leavers.ts` reads them. Without `skipped`, or without a count for
 * a list as long as the service ever lists (it may have been cut), the list is unknown (null, as
 * for adopted runs): the access check decides who left. A shorter list without a count is whole.
 */
function skippedOf(response: TriggerResponse): Pick<Trigger, "skipped" | "skippedCount"> {
  const { skipped, skipped_count: count } = response;
  if (skipped === undefined || (count === undefined && skipped.length >= SKIPPED_LISTED_AT_MOST))
    return { skipped: null, skippedCount: count ?? 0 };
  return { skipped, skippedCount: count ?? skipped.length };
}

/**
 * Runs of this sync config that the mirror does not know, created after its newest known run and
 * sent the same `since` (when the list says), belong to the lost POST. The list is newest first, so it stops early.
 */
async function adoptOrphans({ mirror, ctx }: MirrorPass, intent: Trigger): Promise<Trigger | null> {
  const candidates = new Map<string, RunListItem[]>();
  for await (const run of ctx.api.listAllRuns({ sync_config_id: mirror.syncConfigId }, ctx.signal)) {
    const createdAt = serverTime(run.created_at);
    if (intent.knownBefore !== null && createdAt <= intent.knownBefore) break;
    // A list item without `since` (the service documents its list items as a reduced view of a run)
    // cannot tell a foreign trigger apart: SPEC's rule, created after the newest known run, decides.
    const otherSince = run.since !== undefined && !sameSince(run.since, intent.since);
    if (otherSince || (await ctx.store.runs.isKnown(run.sync_id))) continue;
    const group = candidates.get(run.trigger_id) ?? [];
    group.push(run);
    candidates.set(run.trigger_id, group);
  }
  // The list is newest first: the first group found is the newest trigger.
  const [first] = candidates;
  if (!first) return null;
  const [triggerId, orphans] = first;
  const active = await activate(
    ctx,
    intent,
    { triggerId, skipped: null, skippedCount: 0, adopted: true, startedAt: ctx.now().toISOString() },
    orphans.map((r) => ({
      syncId: r.sync_id,
      userEmail: r.user_email,
      status: r.status,
      createdAt: serverTime(r.created_at),
    })),
  );
  ctx.log.warn(
    { trigger_id: triggerId, runs: orphans.length },
    "adopted the runs of a trigger whose response was lost",
  );
  return active;
}

/**
 * The trigger and its runs become known together: a crash never leaves one without the other.
 * Issued at once (one round trip on PostgreSQL); the trigger as activated is what the pass goes on with.
 */
async function activate(
  ctx: SyncContext,
  intent: Trigger,
  t: Parameters<StoreOps["triggers"]["activate"]>[1],
  runs: NewRun[],
): Promise<Trigger> {
  return ctx.store.transaction(async (tx) => {
    const [active] = await Promise.all([
      tx.triggers.activate(intent.id, t),
      tx.runs.insertMany(intent.id, intent.mirror, runs),
    ]);
    return active;
  });
}

function sameSince(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  return exportTime(a) === exportTime(b);
}
