/**
 * `syncmirror trigger --mirror NAME [--full] [--json]`: a pass of the mirror is due now (paused or
 * not: an operator asked for it). A daemon alive on the database (its heartbeat, `replicas`; on
 * SQLite, the writer lock held) takes it with its first free slot; when none is, this process runs
 * it, under the mirror's lease like a replica would (a trigger left in flight first, as a replica
 * does), and prints its outcome. Exit 0 once the
 * request is recorded (the pass's outcome is printed, not the exit code: `sync` is the command
 * whose exit code follows the outcome); 2 bad usage, or, when this process would run the pass, no
 * token for it (checked before anything is recorded).
 */
import { requireToken } from "../config.js";
import { DatabaseLockedError, SyncConfigNotAppliedError } from "../errors.js";
import { createLeaseHolder, runningReplicas } from "../lease-holder.js";
import { runOwedPass } from "../mirror-pass.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { startableDue } from "../store/schedule-rules.js";
import type { Replica } from "../store/types.js";
import type { MirrorSummary } from "../sync/summary.js";
import { withFinishedFirst } from "../sync/sync-mirror.js";
import type { Command, CommandIo } from "./command.js";
import { withErrors, withJsonFailure } from "./common.js";
import { type ParsedControl, parseControlArgs, printReply, withControl } from "./control-command.js";
import { formatTable } from "./sync.js";

export const trigger: Command = (args, io) =>
  withErrors(io, async () => {
    const parsed = parseControlArgs("trigger", args, io, true);
    await withJsonFailure(io, parsed.json, () => requestPass(parsed, io));
    return 0;
  });

/** Records the request; with no daemon alive and the database free, runs the pass here. */
async function requestPass(parsed: ParsedControl, io: CommandIo): Promise<void> {
  let daemons: Replica[] = [];
  const { reply, heldElsewhere } = await withControl(
    parsed,
    "trigger",
    async (r, _store, held) => ({ reply: r, heldElsewhere: held }),
    {
      mode: parsed.full ? "full" : "incremental",
      tryLock: true,
      before: async (store, held) => {
        daemons = runningReplicas(await store.replicas.live());
        // This process will run the pass: a token it lacks fails before the request is recorded,
        // not after, leaving a pass due that nobody runs.
        if (daemons.length === 0 && !held) requireToken(parsed.config);
      },
    },
  );
  if (daemons.length > 0 || heldElsewhere) {
    const names = daemons.map((d) => d.name).join(", ");
    const who = names ? `Daemons alive: ${names}.` : LOCKED_NOTE;
    printReply(io, parsed.json, { ...reply, pass: null, message: `${reply.message} ${who}` });
    return;
  }
  const ran = await runHere(parsed, io);
  const message = `${reply.message.replace(/: the first replica with a free slot starts it\./, ".")} ${ran.note}`;
  printReply(io, parsed.json, { ...reply, pass: ran.summary ?? null, message });
  if (!parsed.json && ran.summary) io.stdout.write(formatTable([ran.summary]));
}

/** A pass still due and startable, with no trigger of the mirror left in flight. */
async function askedPassStillDue(runtime: Runtime, mirror: string): Promise<boolean> {
  const schedule = await runtime.store.schedules.find(mirror);
  const due = schedule ? startableDue(schedule) : null;
  return due !== null && (await runtime.store.triggers.findInFlight(mirror)) === undefined;
}

const LOCKED_NOTE =
  "Another syncmirror process holds the database: a daemon there takes it; a one-shot `sync` does not, and the pass stays due for the next daemon or trigger.";

/** No daemon is alive: this process takes the pass, as a replica with a free slot would. */
async function runHere(
  parsed: ParsedControl,
  io: CommandIo,
): Promise<{ summary?: MirrorSummary; note: string }> {
  let runtime: Runtime;
  try {
    runtime = await createRuntime(parsed.config, io, { lock: true, retriedBy: "next pass" });
  } catch (error) {
    if (!(error instanceof DatabaseLockedError)) throw error;
    return { note: LOCKED_NOTE };
  }
  try {
    const mirror = parsed.config.mirrors.find((m) => m.name === parsed.mirror);
    if (!mirror) throw new Error(`mirror ${parsed.mirror} vanished from the config`);
    let took = false;
    const holder = createLeaseHolder();
    const runOwed = () =>
      runOwedPass({ runtime, holder }, mirror, io.signal, (running) => {
        took = running;
      });
    let summary = await runOwed();
    // A trigger left in flight was finished first: it was triggered before this request, which is
    // still due. A daemon would take it next; none is alive, so this process does.
    if (summary && (await askedPassStillDue(runtime, mirror.name))) {
      const asked = await runOwed();
      if (asked) summary = withFinishedFirst(asked, summary);
    }
    if (summary) return { summary, note: `No daemon is alive: this process ran it (${summary.outcome}).` };
    // Taken, yet nothing ran: the one such case is a declared mirror with no config applied (the
    // pass and its due are dropped), which no other process would run either.
    if (took)
      return {
        note: `No daemon is alive: this process took it and triggered nothing: ${new SyncConfigNotAppliedError(mirror.name, mirror.declared?.name ?? "").message}`,
      };
    return {
      note: "No daemon is alive, and another process holds the mirror's lease (a `sync`): the pass stays due and runs after it, at the next daemon or trigger.",
    };
  } finally {
    await runtime.close();
  }
}
