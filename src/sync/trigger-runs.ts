/**
 * A trigger's runs with their sources, read once the pass has read what it will (two statements,
 * one round trip on PostgreSQL): the sweep, the leavers and the settle all decide from this one
 * read. Nothing they write changes what they use of it (the sweep marks sources swept, which
 * only the sweep itself looks at, and reads before it writes).
 */
import type { Store } from "../store/store.js";
import type { Run, RunSource } from "../store/types.js";

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
