/**
 * The change feed's one rule, shared by both dialects: at most one change per key per scope (a
 * run's sync_id, or a sweep's id), and a later change replaces an earlier one only if it says more.
 */
import type { ChangeOp, ChangeRecord, SeenRow } from "./types.js";

/** Whether an earlier change of the key in the same scope already says what `next` would. */
export function priorStands(prior: ChangeOp, next: ChangeOp): boolean {
  return prior === next || (prior === "upsert" && next === "access");
}

const OPS: readonly ChangeOp[] = ["upsert", "delete", "access"];

/** Every `prior>next` pair of ops for which `priorStands`: the rule as data, for SQL to apply. */
export const STANDING_PAIRS: readonly string[] = OPS.flatMap((prior) =>
  OPS.filter((next) => priorStands(prior, next)).map((next) => `${prior}>${next}`),
);

/**
 * The changes a page's sightings make (`ChangeRepo.recordSeen`): `upsert` for a row whose
 * resource the page wrote, `access` for one whose user had no access before, in row order.
 */
export function seenChanges(
  rows: readonly SeenRow[],
  written: readonly boolean[],
  hadNoAccess: readonly boolean[],
  change: Omit<ChangeRecord, "key" | "op">,
): ChangeRecord[] {
  return rows.flatMap((row, i): ChangeRecord[] => {
    if (written[i] === true) return [{ ...change, key: row.key, op: "upsert" }];
    if (hadNoAccess[i] === true) return [{ ...change, key: row.key, op: "access" }];
    return [];
  });
}
