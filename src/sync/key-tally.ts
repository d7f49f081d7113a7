/**
 * Keys, not rows: an export lists a key once per user who can see it, so a first pass into an
 * empty mirror writes each key once and finds its other rows "unchanged". The tally records what
 * each key was in this pass (new beats changed beats unchanged), for the summary's `keys`.
 * Held in memory for the pass; a pass resumed by a new process counts what that process read.
 */
export type KeyState = "new" | "changed" | "unchanged";
export type KeyTally = Map<string, KeyState>;

const RANK: Readonly<Record<KeyState, number>> = { unchanged: 0, changed: 1, new: 2 };

export function tallyKey(tally: KeyTally, key: string, state: KeyState): void {
  const before = tally.get(key);
  if (before === undefined || RANK[state] > RANK[before]) tally.set(key, state);
}

export function countKeys(tally: KeyTally): Record<KeyState, number> {
  const counts = { new: 0, changed: 0, unchanged: 0 };
  for (const state of tally.values()) counts[state]++;
  return counts;
}
