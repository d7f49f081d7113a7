/**
 * The public `changes` feed: a consumer keeps the last `seq` it processed and reads onward.
 */
import { replacingOp, seenChanges } from "../change-rule.js";
import type { OnRecorded } from "../driver.js";
import type { AccessRepo, ChangeRepo } from "../store.js";
import type { ChangeOp, ChangeRecord } from "../types.js";
import type { Db } from "./open.js";
import type { Sync } from "./sync-repo.js";

export function createChangeRepo(
  db: Db,
  onRecorded: OnRecorded,
  access: Pick<Sync<AccessRepo>, "seeAll">,
): Sync<ChangeRepo> {
  // A change is recorded for most exported rows of a cold mirror: plain better-sqlite3 statements with
  // positional parameters, because drizzle's per-call placeholder mapping cost more than the SQLite work.
  const sqlite = db.$client;
  const existing = sqlite.prepare<[string, string], { seq: number; op: ChangeOp }>(
    "SELECT seq, op FROM changes WHERE sync_id = ? AND key = ? LIMIT 1",
  );
  const remove = sqlite.prepare<[number]>("DELETE FROM changes WHERE seq = ?");
  const insert = sqlite.prepare<[string, ChangeOp, string, string, string]>(
    "INSERT INTO changes (seq, key, op, at, mirror, sync_id) VALUES (NULL, ?, ?, ?, ?, ?)",
  );

  const record = (c: ChangeRecord): void => {
    const prior = existing.get(c.scope, c.key);
    if (prior !== undefined) remove.run(prior.seq);
    insert.run(c.key, replacingOp(prior?.op, c.op), c.at, c.mirror, c.scope);
    onRecorded();
  };

  return {
    recordAll(changes) {
      for (const c of changes) record(c);
    },
    recordSeen(rows, written, change) {
      for (const c of seenChanges(rows, written, access.seeAll(rows), change)) record(c);
    },
  };
}
