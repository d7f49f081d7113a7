/**
 * A trigger's runs with their sources, read once the pass has read what it will (two statements,
 * one round trip on PostgreSQL): the sweep, the leavers and the settle all decide from this one
 * read. Nothing they write changes what they use of it (the sweep marks sources swept, which
 * only the sweep itself looks at, and reads before it writes).
 */
import type { Store } from "../store/store.js";
import type { Run, RunSource } from "../store/types.js";
import type { RunFact } from "./leavers.js";
import { sourceSucceeded } from "./outcome.js";

export interface TriggerRuns {
  runs: Run[];
  sources: ReadonlyMap<string, RunSource[]>;
}

export async function readTriggerRuns(store: Store, triggerRowId: number): Promise<TriggerRuns> {
  const [runs, sources] = await Promise.all([
    store.runs.ofTrigger(triggerRowId),
    store.runs.sourcesOfTrigger(triggerRowId),
  ]);
  return { runs, sources };
}

/** The run's sources (none before its first page was saved). */
export function sourcesOfRun(read: TriggerRuns, run: Run): RunSource[] {
  return read.sources.get(run.syncId) ?? [];
}

/** Each run as the leavers are decided from it: who ran, whether it was read, on which servers. */
export function runFacts(read: TriggerRuns): RunFact[] {
  return read.runs.map((run) => {
    const sources = run.ingest === "done" ? sourcesOfRun(read, run) : [];
    return {
      userEmail: run.userEmail,
      read: run.ingest === "done",
      servers: sources.map((s) => s.serverInstanceId),
      succeededAt: sources.some((s) => sourceSucceeded(run, s)) ? run.createdAt : null,
    };
  });
}

/** The service's `created_at` of the trigger's first run it knows: when the mirror first saw what the trigger shows. */
export function firstRunCreatedAt(read: TriggerRuns): string | undefined {
  return read.runs
    .map((r) => r.createdAt)
    .filter((c): c is string => c !== null)
    .sort()[0];
}
