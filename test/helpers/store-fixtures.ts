/**
 * Values for the store contract suites: fixed times, fresh ids, a resource as the sync code hands
 * it to the store, the page step that ingests one, and a run as the store returns it.
 */
import { randomUUID } from "node:crypto";
import type { Store, StoreOps } from "../../src/store/store.js";
import type { ResourceWrite, Run } from "../../src/store/types.js";

export const T1 = "2026-03-01T10:00:00.000Z";
export const T2 = "2026-03-02T10:00:00.000Z";
export const T3 = "2026-03-03T10:00:00.000Z";

export const uid = () => randomUUID().slice(0, 8);

/** A finished run of trigger 1 waiting for its export, with `extra` on top. */
export function storedRun(extra: Partial<Run> = {}): Run {
  return {
    syncId: "r1",
    triggerRowId: 1,
    mirror: "m",
    userEmail: "a@example.com",
    status: "completed",
    createdAt: "2026-11-20T10:00:00.000Z",
    ingest: "waiting",
    nextOffset: 0,
    continuesSent: 0,
    continuePending: null,
    schemaVersion: null,
    engineVersion: null,
    error: null,
    upserted: 0,
    unchanged: 0,
    rejected: 0,
    keysNew: 0,
    keysChanged: 0,
    ...extra,
  };
}

export function resource(key: string, hash = "h1"): ResourceWrite {
  return {
    key,
    contentHash: hash,
    contentText: "body ü 🙂",
    contentFormat: "markdown",
    contentStatus: "ok",
    title: "Title",
    url: "https://example.test/doc",
    type: "document",
    sourceType: "docs",
    serverInstanceId: "srv-1",
    nativeId: `native-${key}`,
    modifiedAt: T1,
    fetchedAt: T2,
    fields: JSON.stringify({ a: 1, nested: { b: [1, "two", null] } }),
    metadata: JSON.stringify({ tags: ["x"] }),
    relations: null,
    attachments: JSON.stringify([]),
    provenance: JSON.stringify({ via: "test" }),
  };
}

/** What a page does with a resource new to the mirror: write it, record Ann's access and the change. */
export async function ingestNew(tx: StoreOps, mirror: string, r: ResourceWrite): Promise<void> {
  await tx.resources.writeAll([r], null, T1);
  await tx.access.seeAll([
    {
      mirror,
      userEmail: "ann@example.test",
      key: r.key,
      serverInstanceId: "srv-1",
      source: "docs",
      seenAt: T1,
    },
  ]);
  await tx.changes.recordAll([{ key: r.key, op: "upsert", at: T1, mirror, scope: "run-1" }]);
}

/** A trigger intent as `sync` writes it before the POST, with `t` changed. */
export function createIntent(
  store: Store,
  mirror: string,
  t: Partial<Parameters<Store["triggers"]["createIntent"]>[0]>,
) {
  return store.triggers.createIntent({
    mirror,
    mode: "full",
    since: null,
    knownBefore: null,
    intentAt: T1,
    allowMassDelete: false,
    dryRun: false,
    startedBy: null,
    startedByName: null,
    dueAt: null,
    dueReason: null,
    ...t,
  });
}
