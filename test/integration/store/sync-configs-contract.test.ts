/**
 * The store contract for the sync configs syncmirror manages (`store/managed-sync-configs.ts`), on
 * both dialects: what `apply` records survives in the database, and the full pass a settings change
 * owes is paid only by a full trigger created after the change.
 */
import { describe, expect, it } from "vitest";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { createIntent, T1, T2, T3, uid } from "../../helpers/store-fixtures.js";

describe.each(await storeDialects())("store contract, managed sync configs: $name", (dialect) => {
  const opened = useStore(dialect);
  const applied = (mirror: string, c: { id?: string; fullOwed?: boolean; at?: string } = {}) =>
    opened.store.syncConfigs.recordApplied(mirror, {
      syncConfigId: c.id ?? `cfg-${mirror}`,
      projectId: "p1",
      name: `Config of ${mirror}`,
      origin: "created",
      adoptedAt: null,
      appliedHash: "sha256:1",
      at: c.at ?? T2,
      fullOwed: c.fullOwed ?? false,
    });

  it("records a create in progress, then the config applied, and forgets the creating mark and error", async () => {
    const mirror = `m-${uid()}`;
    expect(await opened.store.syncConfigs.find(mirror)).toBeUndefined();
    await opened.store.syncConfigs.recordCreating(mirror, { name: "Wiki", projectId: "p1", at: T1 });
    expect(await opened.store.syncConfigs.find(mirror)).toMatchObject({
      mirror,
      syncConfigId: null,
      origin: null,
      name: "Wiki",
      creatingAt: T1,
    });
    await opened.store.syncConfigs.recordError(mirror, { error: "lost", at: T1, createRefused: false });
    expect(await opened.store.syncConfigs.find(mirror)).toMatchObject({
      creatingAt: T1,
      lastError: "lost",
      firstErrorAt: T1,
    });
    await applied(mirror, { id: "cfg-1" });
    expect(await opened.store.syncConfigs.find(mirror)).toEqual({
      mirror,
      syncConfigId: "cfg-1",
      projectId: "p1",
      name: `Config of ${mirror}`,
      origin: "created",
      creatingAt: null,
      adoptedAt: null,
      appliedHash: "sha256:1",
      appliedAt: T2,
      fullPendingAfter: null,
      lastError: null,
      lastErrorAt: null,
      firstErrorAt: null,
    });
  });

  it("keeps what was applied when a later apply fails; a refused create drops its creating mark", async () => {
    const mirror = `m-${uid()}`;
    await applied(mirror);
    await opened.store.syncConfigs.recordCreating(mirror, { name: "Renamed", projectId: "p1", at: T2 });
    await opened.store.syncConfigs.recordError(mirror, {
      error: "400: not users",
      at: T3,
      createRefused: true,
    });
    expect(await opened.store.syncConfigs.find(mirror)).toMatchObject({
      syncConfigId: `cfg-${mirror}`,
      origin: "created",
      creatingAt: null,
      lastError: "400: not users",
      lastErrorAt: T3,
    });
  });

  it("owes a full pass after a settings change until a full trigger created after it succeeds", async () => {
    const mirror = `m-${uid()}`;
    const before = await createIntent(opened.store, mirror, {});
    await applied(mirror, { fullOwed: true });
    const owed = (await opened.store.syncConfigs.find(mirror))?.fullPendingAfter;
    expect(owed).toBe(before.id);
    // A full that was already in flight when the config changed ran with the old settings.
    await opened.store.syncConfigs.fullSucceeded(mirror, before.id);
    expect((await opened.store.syncConfigs.find(mirror))?.fullPendingAfter).toBe(owed);
    // An apply that changes no setting leaves the owed full owed.
    await applied(mirror, { fullOwed: false });
    expect((await opened.store.syncConfigs.find(mirror))?.fullPendingAfter).toBe(owed);
    const after = await createIntent(opened.store, mirror, {});
    await opened.store.syncConfigs.fullSucceeded(mirror, after.id);
    expect((await opened.store.syncConfigs.find(mirror))?.fullPendingAfter).toBeNull();
  });

  it("owes a full from the first trigger on for a mirror that never triggered", async () => {
    const mirror = `m-${uid()}`;
    await applied(mirror, { fullOwed: true });
    expect((await opened.store.syncConfigs.find(mirror))?.fullPendingAfter).toBe(0);
    const first = await createIntent(opened.store, mirror, {});
    await opened.store.syncConfigs.fullSucceeded(mirror, first.id);
    expect((await opened.store.syncConfigs.find(mirror))?.fullPendingAfter).toBeNull();
  });

  it("lists, moves (a renamed mirror) and removes records in one transaction", async () => {
    const [a, b] = [`a-${uid()}`, `b-${uid()}`];
    await applied(a, { id: "cfg-shared" });
    await opened.store.transaction(async (tx) => {
      await tx.syncConfigs.remove(a);
      await tx.syncConfigs.recordApplied(b, {
        syncConfigId: "cfg-shared",
        projectId: "p1",
        name: "Shared",
        origin: "adopted",
        adoptedAt: T3,
        appliedHash: "sha256:2",
        at: T3,
        fullOwed: false,
      });
    });
    const mirrors = (await opened.store.syncConfigs.list()).map((r) => r.mirror);
    expect(mirrors).toContain(b);
    expect(mirrors).not.toContain(a);
    expect(await opened.store.syncConfigs.find(b)).toMatchObject({ origin: "adopted", adoptedAt: T3 });
    await expect(
      opened.store.transaction(async (tx) => {
        await tx.syncConfigs.remove(b);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await opened.store.syncConfigs.find(b)).toBeDefined();
  });
});
