/**
 * The change feed's one rule, shared by both dialects: at most one change per key per scope (a
 * run's sync_id, or a sweep's id). A later change of the key in the scope replaces the earlier one
 * with a new seq, because a consumer may have read the earlier one between two commits of the scope
 * (pages of a run, pairs of a sweep): reading onward, it must meet the key again.
 */
import type { ChangeOp, ChangeRecord, SeenRow } from "./types.js";

/**
 * The op of the change that replaces `prior` (if any) with `next`: an `upsert` not yet read may be
 * what it replaces, so a change that only adds who may see the key keeps saying `upsert`.
 */
export function replacingOp(prior: ChangeOp | undefined, next: ChangeOp): ChangeOp {
  return prior === "upsert" && next === "access" ? "upsert" : next;
}

const OPS: readonly ChangeOp[] = ["upsert", "delete", "access"];

/** Every `prior>next` pair of ops whose replacement keeps `prior`'s op: the rule as data, for SQL. */
export const PRIOR_OP_KEPT: readonly string[] = OPS.flatMap((prior) =>
  OPS.filter((next) => next !== prior && replacingOp(prior, next) === prior).map(
    (next) => `${prior}>${next}`,
  ),
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
