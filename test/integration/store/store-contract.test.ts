/**
 * The store contract, page side, for both dialects: resources, access, the change feed,
 * transactions and what follows a commit, through the `Store` interface the way a page uses it.
 * Each test works under its own mirror and keys, so one store per dialect serves the file.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { CHANGES_CHANNEL } from "../../../src/store/postgres/postgres-store.js";
import type { ChangeRecord, PairRef, ResourceWrite } from "../../../src/store/types.js";
import { storeDialects, useStore } from "../../helpers/store-dialects.js";
import { ingestNew, resource, T1, T2, T3, uid } from "../../helpers/store-fixtures.js";

describe.each(await storeDialects())("store contract, pages: $name", (dialect) => {
  const opened = useStore(dialect);

  const changesOf = async (key: string) =>
    (
      await opened.query<{ seq: number | string; op: string; sync_id: string }>(
        "SELECT seq, op, sync_id FROM changes WHERE key = ? ORDER BY seq",
        key,
      )
    ).map((r) => ({ seq: Number(r.seq), op: r.op, scope: r.sync_id }));

  const hasAnyAccess = async (key: string) => (await opened.store.access.keysWithAccess([key])).has(key);

  it("reads a page's stored states at once, under the keys asked, missing keys left out", async () => {
    const [live, gone, never] = [`k-${uid()}`, `k-${uid()}\u0000nul`, `k-${uid()}`];
    await opened.store.transaction(async (tx) => {
      await tx.resources.writeAll([resource(live)], "engine-1", T1);
      await tx.resources.writeAll([resource(gone, "h2")], "engine-1", T1);
      await tx.resources.tombstoneAll([gone], T2);
    });
    const states = await opened.store.resources.findStates([live, gone, never]);
    expect([...states.keys()].sort()).toEqual([live, gone].sort());
    expect(states.get(live)).toEqual({ contentHash: "h1", deletedAt: null, updatedAt: T1 });
    expect(states.get(gone)).toEqual({ contentHash: "h2", deletedAt: T2, updatedAt: T2 });
    expect(await opened.store.resources.findStates([])).toEqual(new Map());
  });

  it("writes a page in one transaction: new, unchanged, tombstoned, back from a tombstone", async () => {
    const key = `k-${uid()}`;
    expect(await opened.store.resources.findState(key)).toBeUndefined();
    await opened.store.transaction(async (tx) => {
      await tx.resources.writeAll([resource(key)], "engine-1", T1);
    });
    expect(await opened.store.resources.findState(key)).toEqual({
      contentHash: "h1",
      deletedAt: null,
      updatedAt: T1,
    });
    await opened.store.transaction((tx) => tx.resources.tombstoneAll([key], T2));
    expect(await opened.store.resources.findState(key)).toEqual({
      contentHash: "h1",
      deletedAt: T2,
      updatedAt: T2,
    });
    const [tomb] = await opened.query<Record<string, unknown>>(
      "SELECT content_text, fields, provenance FROM resources WHERE key = ?",
      key,
    );
    expect(tomb).toEqual({ content_text: null, fields: null, provenance: null });
    await opened.store.transaction((tx) => tx.resources.writeAll([resource(key, "h2")], null, T3));
    expect(await opened.store.resources.findState(key)).toEqual({
      contentHash: "h2",
      deletedAt: null,
      updatedAt: T3,
    });
    const [row] = await opened.query<{ fields: unknown; content_text: string }>(
      "SELECT fields, content_text FROM resources WHERE key = ?",
      key,
    );
    const fields = typeof row?.fields === "string" ? JSON.parse(row.fields) : row?.fields;
    expect(fields).toEqual({ a: 1, nested: { b: [1, "two", null] } });
    expect(row?.content_text).toBe("body ü 🙂");
  });

  it("writes a page's resources at once, as one by one: a key written twice keeps its last write", async () => {
    const play = async (batched: boolean) => {
      const run = uid();
      const [fresh, back, twice, odd] = ["fresh", "back", "twice", "odd\u0000"].map((k) => `${k}-${run}`) as [
        string,
        string,
        string,
        string,
      ];
      await opened.store.transaction(async (tx) => {
        await tx.resources.writeAll([resource(back)], null, T1);
        await tx.resources.tombstoneAll([back], T2);
      });
      const page = [
        resource(fresh),
        resource(back, "h2"),
        resource(twice, "h2"),
        { ...resource(odd), modifiedAt: "never", fields: JSON.stringify({ "k\u0000": "\ud800" }) },
        { ...resource(twice, "h3"), title: "Second" },
      ];
      await opened.store.transaction(async (tx) => {
        if (batched) return tx.resources.writeAll(page, "engine-2", T3);
        for (const r of page) await tx.resources.writeAll([r], "engine-2", T3);
      });
      const rows: Record<string, unknown>[] = [];
      for (const key of [back, fresh, odd, twice]) {
        rows.push(
          ...(await opened.query<Record<string, unknown>>(
            `SELECT key, content_hash, title, modified_at, fields, engine_version, updated_at, deleted_at
             FROM resources WHERE key = ?`,
            dialect.name === "postgres" ? key.replace("\u0000", "\ufffd") : key,
          )),
        );
      }
      return rows.map((r): Record<string, unknown> => ({ ...r, key: String(r.key).replace(run, "run") }));
    };

    const batched = await play(true);
    expect(batched).toEqual(await play(false));
    const states = Object.fromEntries(batched.map((r) => [r.key, [r.content_hash, r.title, r.deleted_at]]));
    expect(states).toEqual({
      "back-run": ["h2", "Title", null],
      "fresh-run": ["h1", "Title", null],
      [dialect.name === "postgres" ? "odd\ufffd-run" : "odd\u0000-run"]: ["h1", "Title", null],
      "twice-run": ["h3", "Second", null],
    });
    await opened.store.transaction((tx) => tx.resources.writeAll([], null, T3));
  });

  it("takes NUL, lone surrogate escapes and an unparseable time in one page without failing it", async () => {
    const mirror = `m-${uid()}`;
    const key = `nul\u0000-${uid()}`;
    const odd: ResourceWrite = {
      ...resource(key),
      contentText: "a\u0000b",
      modifiedAt: "last Tuesday",
      fields: JSON.stringify({ "k\u0000": "\ud800", pair: "\ud83d\ude00", text: "\\u0000" }),
    };
    await opened.store.transaction((tx) => ingestNew(tx, mirror, odd));
    expect(await opened.store.resources.findState(key)).toEqual({
      contentHash: "h1",
      deletedAt: null,
      updatedAt: T1,
    });
    expect(await hasAnyAccess(key)).toBe(true);
    if (dialect.name === "postgres") {
      // Postgres text and jsonb cannot hold NUL or a lone surrogate: U+FFFD stands in, as for text.
      const [row] = await opened.query<{ content_text: string; modified_at: unknown; fields: unknown }>(
        "SELECT content_text, modified_at, fields FROM resources WHERE key = ?",
        key.replace("\u0000", "\ufffd"),
      );
      expect(row).toEqual({
        content_text: "a\ufffdb",
        modified_at: null,
        fields: { "k\ufffd": "\ufffd", pair: "\ud83d\ude00", text: "\\u0000" },
      });
    }
  });

  it("records a page's access at once, as row by row: repeats folded into their first", async () => {
    const mirror = `m-${uid()}`;
    const pair: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const [old, fresh, odd] = [`old-${uid()}`, `new-${uid()}`, `nul\u0000-${uid()}`];
    for (const key of [old, fresh, odd]) await opened.store.resources.writeAll([resource(key)], null, T1);
    await opened.store.access.seeAll([{ ...pair, key: old, source: "docs", seenAt: T1 }]);
    const row = (key: string, source: string, seenAt: string) => ({ ...pair, key, source, seenAt });
    const answers = await opened.store.transaction((tx) =>
      tx.access.seeAll([
        row(old, "docs", T2),
        row(fresh, "docs", T3),
        row(odd, "docs", T2),
        row(fresh, "wiki", T2),
        { ...row(fresh, "docs", T2), userEmail: "bob@example.test" },
      ]),
    );
    expect(answers).toEqual([false, true, true, false, true]);
    expect(await opened.store.access.seeAll([])).toEqual([]);
    const stored = await opened.query<{
      user_email: string;
      key: string;
      source: string;
      last_seen_at: unknown;
    }>(
      "SELECT user_email, key, source, last_seen_at FROM resource_access WHERE mirror = ? ORDER BY user_email, key",
      mirror,
    );
    const iso = (v: unknown) => new Date(v as string).toISOString();
    expect(
      stored.map((r) => [r.user_email, r.key.replace("\ufffd", "\u0000"), r.source, iso(r.last_seen_at)]),
    ).toEqual([
      ["ann@example.test", fresh, "wiki", T3],
      ["ann@example.test", odd, "docs", T2],
      ["ann@example.test", old, "docs", T2],
      ["bob@example.test", fresh, "docs", T2],
    ]);
  });

  it("records access, refreshes it, sweeps misses at the threshold and revokes whole pairs", async () => {
    const mirror = `m-${uid()}`;
    const pair: PairRef = { mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" };
    const [a, b, c] = [`a-${uid()}`, `b-${uid()}`, `c-${uid()}`];
    for (const key of [a, b, c]) await opened.store.resources.writeAll([resource(key)], null, T1);
    const see = async (key: string, seenAt: string) =>
      (await opened.store.access.seeAll([{ ...pair, key, source: "docs", seenAt }]))[0];
    expect(await see(a, T1)).toBe(true);
    expect(await see(a, T1)).toBe(false);
    expect(await see(b, T1)).toBe(true);
    expect(await see(c, T1)).toBe(true);
    expect(await hasAnyAccess(a)).toBe(true);
    expect(await hasAnyAccess(`none-${uid()}`)).toBe(false);
    expect(await opened.store.access.countPairKeys(pair)).toBe(3);
    expect(await opened.store.access.pairsWithAccess(mirror)).toEqual([pair]);
    await opened.store.resources.tombstoneAll([c], T2);
    expect(await opened.store.access.countLive(mirror)).toBe(2);
    // Live keys are counted once per mirror, however many users hold them, and only in their mirror.
    const other = `m-${uid()}`;
    await opened.store.access.seeAll([
      {
        ...pair,
        userEmail: "bob@example.test",
        key: a,
        source: "docs",
        seenAt: T2,
      },
    ]);
    for (const key of [b, c])
      await opened.store.access.seeAll([{ ...pair, mirror: other, key, source: "docs", seenAt: T1 }]);
    expect(await opened.store.access.countLive(mirror)).toBe(2);
    expect(await opened.store.access.countLive(other)).toBe(1);
    // Each pair holding access through the mirror once, however many keys it holds.
    const cy: PairRef = { mirror, userEmail: "cy@example.test", serverInstanceId: "srv-2" };
    await opened.store.access.seeAll([a, b].map((key) => ({ ...cy, key, source: "docs", seenAt: T1 })));
    const byPair = (pairs: PairRef[]) =>
      pairs.map((p) => `${p.mirror} ${p.userEmail} ${p.serverInstanceId}`).sort();
    expect(byPair(await opened.store.access.pairsWithAccess(mirror))).toEqual(
      byPair([pair, { ...pair, userEmail: "bob@example.test" }, cy]),
    );
    expect(await opened.store.access.pairsWithAccess(other)).toEqual([{ ...pair, mirror: other }]);
    await opened.store.access.revokePair(cy, 100);
    // Keys the pairs were seen holding by runs created at or after a time: once per key.
    const bob = { ...pair, userEmail: "bob@example.test" };
    const seenSince = (pairs: PairRef[], since: string) =>
      opened.store.access.countKeysSeenSince(pairs, since);
    expect(await seenSince([pair, bob], T1)).toBe(3);
    expect(await seenSince([pair], T1)).toBe(3);
    expect(await seenSince([pair, bob], T2)).toBe(1);
    expect(await seenSince([pair], T2)).toBe(0);
    expect(await seenSince([pair, bob], T3)).toBe(0);
    expect(await seenSince([{ ...pair, mirror: other }], T1)).toBe(2);
    expect(await seenSince([{ ...pair, serverInstanceId: "srv-2" }], T1)).toBe(0);
    expect(await seenSince([], T1)).toBe(0);
    await opened.store.access.revokePair({ ...pair, userEmail: "bob@example.test" }, 100);

    // A snapshot created at T2 saw `a` only: b and c miss once, then reach threshold 2 next time.
    expect(await see(a, T2)).toBe(false);
    expect(await see(a, T1)).toBe(false); // an older run never moves last_seen_at back
    expect(await opened.store.access.countRevocable(pair, T2, 2)).toBe(0);
    expect(await opened.store.access.sweepMissed(pair, T2, 2, 100)).toEqual([]);
    expect(await opened.store.access.countRevocable(pair, T2, 2)).toBe(2);
    // Each pair with its own snapshot, in the order asked; a pair holding nothing counts 0.
    const nobody = { ...pair, userEmail: "nobody@example.test" };
    expect(
      await opened.store.access.countRevocableEach(
        [
          { pair, snapshotAt: T2 },
          { pair: nobody, snapshotAt: T2 },
          { pair, snapshotAt: T1 },
          { pair, snapshotAt: T3 },
        ],
        2,
      ),
    ).toEqual([2, 0, 0, 2]);
    expect(await opened.store.access.countRevocableEach([{ pair, snapshotAt: T3 }], 1)).toEqual([3]);
    expect(await opened.store.access.countRevocableEach([], 2)).toEqual([]);
    // Over several pairs each key counts once, however many of them would lose it; each pair is
    // judged against its own snapshot and misses, and another mirror's rows never count.
    const dee = { ...pair, userEmail: "dee@example.test" };
    const d = `d-${uid()}`;
    await opened.store.access.seeAll([b, c, d].map((key) => ({ ...dee, key, source: "docs", seenAt: T1 })));
    const revocableKeys = (pairs: PairRef[], snapshotAt: string, threshold: number) =>
      opened.store.access.countRevocableKeys(
        pairs.map((p) => ({ pair: p, snapshotAt })),
        threshold,
      );
    expect(
      await opened.store.access.countRevocableEach(
        [
          { pair, snapshotAt: T2 },
          { pair: dee, snapshotAt: T2 },
        ],
        1,
      ),
    ).toEqual([2, 3]);
    expect(await revocableKeys([pair, dee], T2, 1)).toBe(3);
    expect(await revocableKeys([pair], T2, 1)).toBe(2);
    expect(await revocableKeys([pair, dee], T2, 2), "dee's keys have missed no snapshot yet").toBe(2);
    expect(await revocableKeys([pair, dee], T1, 1), "nothing older than its snapshot").toBe(0);
    expect(
      await opened.store.access.countRevocableKeys(
        [
          { pair: dee, snapshotAt: T2 },
          { pair, snapshotAt: T1 },
        ],
        1,
      ),
    ).toBe(3);
    expect(await revocableKeys([{ ...dee, mirror: other }], T2, 1)).toBe(0);
    expect(await revocableKeys([], T2, 1)).toBe(0);
    await opened.store.access.revokePair(dee, 100);
    expect((await opened.store.access.sweepMissed(pair, T2, 2, 100)).sort()).toEqual([b, c].sort());
    expect(await opened.store.access.countPairKeys(pair)).toBe(1);
    expect(await opened.store.access.revokePair(pair, 100)).toEqual([a]);
    expect(await opened.store.access.pairsWithAccess(mirror)).toEqual([]);
  });

  it("answers which of many keys anyone may still see, and tombstones many keys at once", async () => {
    const [m1, m2] = [`m-${uid()}`, `m-${uid()}`];
    const [a, b, none, nul] = [`a-${uid()}`, `b-${uid()}`, `none-${uid()}`, `nul\u0000-${uid()}`];
    const see = (mirror: string, key: string) => ({
      mirror,
      userEmail: "ann@example.test",
      serverInstanceId: "srv-1",
      key,
      source: "docs",
      seenAt: T1,
    });
    await opened.store.access.seeAll([see(m1, a), see(m2, b), see(m1, nul)]);
    expect(await opened.store.access.keysWithAccess([a, b, none, nul, a])).toEqual(new Set([a, b, nul]));
    expect(await opened.store.access.keysWithAccess([])).toEqual(new Set());

    await opened.store.transaction(async (tx) => {
      await tx.resources.writeAll([resource(a), resource(none), resource(nul)], null, T1);
      await tx.resources.tombstoneAll([none, nul, `never-${uid()}`], T2);
      await tx.resources.tombstoneAll([], T2);
    });
    const states = await opened.store.resources.findStates([a, none, nul]);
    expect(states.get(a)?.deletedAt).toBeNull();
    expect(states.get(none)).toEqual({ contentHash: "h1", deletedAt: T2, updatedAt: T2 });
    expect(states.get(nul)).toEqual({ contentHash: "h1", deletedAt: T2, updatedAt: T2 });
  });

  it("records at most one change per key and scope, each later one replacing the earlier with a new seq", async () => {
    const mirror = `m-${uid()}`;
    const [k1, k2] = [`k-${uid()}`, `k-${uid()}`];
    const record = (key: string, op: "upsert" | "delete" | "access", scope: string) =>
      opened.store.transaction((tx) => tx.changes.recordAll([{ key, op, at: T1, mirror, scope }]));
    /** The key's changes as op, scope, and whether its seq moved past every seq seen before. */
    const recordSeen = async (key: string, op: "upsert" | "delete" | "access", scope: string) => {
      const before = Math.max(0, ...(await changesOf(key)).map((c) => c.seq));
      await record(key, op, scope);
      return (await changesOf(key)).map((c) => [c.op, c.scope, c.seq > before]);
    };

    expect(await recordSeen(k1, "upsert", "run-1")).toEqual([["upsert", "run-1", true]]);
    // The content changed again later in the run: a consumer that read the first upsert reads it again.
    expect(await recordSeen(k1, "upsert", "run-1")).toEqual([["upsert", "run-1", true]]);
    // Only access changed since: the upsert a consumer may not have read yet stays an upsert.
    expect(await recordSeen(k1, "access", "run-1")).toEqual([["upsert", "run-1", true]]);
    expect(await recordSeen(k1, "access", "run-2")).toEqual([
      ["upsert", "run-1", false],
      ["access", "run-2", true],
    ]);
    expect(await recordSeen(k1, "upsert", "run-2")).toEqual([
      ["upsert", "run-1", false],
      ["upsert", "run-2", true],
    ]);

    expect(await recordSeen(k2, "access", "sweep-1")).toEqual([["access", "sweep-1", true]]);
    // A second user's access taken in the same sweep, in a transaction of its own.
    expect(await recordSeen(k2, "access", "sweep-1")).toEqual([["access", "sweep-1", true]]);
    expect(await recordSeen(k2, "delete", "sweep-1")).toEqual([["delete", "sweep-1", true]]);
    expect(await recordSeen(k2, "access", "sweep-1")).toEqual([["access", "sweep-1", true]]);
  });

  it("records a batch of changes as one call per change in the same order would", async () => {
    type Op = "upsert" | "delete" | "access";
    const run = uid();
    const [before, during] = [`run-1-${run}`, `run-9-${run}`];
    // Stored first: s1 upserted and s2 seen in the batch's scope, s3 seen in another scope.
    const stored: [string, Op, string][] = [
      ["s1", "upsert", before],
      ["s2", "access", before],
      ["s3", "access", during],
    ];
    const batch: [string, Op][] = [
      ["s1", "access"], // replaces the stored upsert, still an upsert
      ["s2", "upsert"], // replaces the stored access
      ["n", "upsert"],
      ["n", "access"], // a repeat in the batch: replaces it, still an upsert
      ["a", "access"],
      ["a", "upsert"], // replaces the batch's own access
      ["nul\u0000key", "upsert"],
      ["s3", "access"], // another scope's change does not count
      ["a", "delete"],
    ];
    const play = async (batched: boolean) => {
      const mirror = `m-${uid()}`;
      const change = (key: string, op: Op, scope = before) => ({
        key: `${mirror}-${key}`,
        op,
        at: T1,
        mirror,
        scope,
      });
      for (const [key, op, scope] of stored)
        await opened.store.transaction((tx) => tx.changes.recordAll([change(key, op, scope)]));
      const changes = batch.map(([key, op]) => change(key, op));
      await opened.store.transaction(async (tx) => {
        if (batched) return tx.changes.recordAll(changes);
        for (const c of changes) await tx.changes.recordAll([c]);
      });
      const feed = await opened.query<{ key: string; op: string; sync_id: string }>(
        "SELECT key, op, sync_id FROM changes WHERE mirror = ? ORDER BY seq",
        mirror,
      );
      return feed.map((r) => [r.key.slice(mirror.length + 1), r.op, r.sync_id]);
    };

    const batched = await play(true);
    expect(batched).toEqual(await play(false));
    expect(batched).toEqual([
      ["s3", "access", during],
      ["s1", "upsert", before],
      ["s2", "upsert", before],
      ["n", "upsert", before],
      [expect.stringMatching(/^nul.key$/), "upsert", before],
      ["s3", "access", before],
      ["a", "delete", before],
    ]);
    await opened.store.transaction((tx) => tx.changes.recordAll([]));
  });

  it("records a page's sightings as seeAll then recordAll would, a repeated key included", async () => {
    const scope = "run-seen";
    const play = async (oneCall: boolean, repeat: boolean) => {
      const mirror = `m-${uid()}`;
      const [ann, bob] = ["ann@example.test", "bob@example.test"];
      const row = (userEmail: string, key: string) => ({
        mirror,
        userEmail,
        key: `${mirror}-${key}`,
        serverInstanceId: "srv-1",
        source: "docs",
        seenAt: T1,
      });
      // Before the page: ann sees "old" (its upsert recorded in this scope) and "known".
      await opened.store.transaction(async (tx) => {
        await tx.resources.writeAll([resource(`${mirror}-old`), resource(`${mirror}-known`)], null, T1);
        await tx.changes.recordSeen([row(ann, "old"), row(ann, "known")], [true, false], {
          at: T1,
          mirror,
          scope,
        });
      });
      // The page writes "new" and "old" again, bob first sees "known", ann sees it again (nothing
      // to record), and nul-key is new.
      const rows = [
        row(ann, "new"),
        row(ann, "old"),
        row(bob, "known"),
        row(ann, "known"),
        row(ann, "nul\u0000key"),
      ];
      const written = [true, true, false, false, true];
      if (repeat) {
        rows.push(row(bob, "known"));
        written.push(true);
      }
      await opened.store.transaction(async (tx) => {
        await tx.resources.writeAll(
          [resource(`${mirror}-new`), resource(`${mirror}-nul\u0000key`)],
          null,
          T2,
        );
        const change = { at: T2, mirror, scope };
        if (oneCall) return tx.changes.recordSeen(rows, written, change);
        const had = await tx.access.seeAll(rows);
        await tx.changes.recordAll(
          rows.flatMap((r, i): ChangeRecord[] => {
            if (written[i]) return [{ ...change, key: r.key, op: "upsert" }];
            return had[i] ? [{ ...change, key: r.key, op: "access" }] : [];
          }),
        );
      });
      const feed = await opened.query<{ key: string; op: string; at: string | Date }>(
        "SELECT key, op, at FROM changes WHERE mirror = ? ORDER BY seq",
        mirror,
      );
      const access = await opened.query<{ user_email: string; key: string }>(
        "SELECT user_email, key FROM resource_access WHERE mirror = ? ORDER BY user_email, key",
        mirror,
      );
      const local = (key: string) => key.slice(mirror.length + 1);
      return {
        feed: feed.map((r) => [local(r.key), r.op]),
        access: access.map((r) => [r.user_email, local(r.key)]),
      };
    };
    for (const repeat of [false, true]) {
      const seen = await play(true, repeat);
      expect(seen).toEqual(await play(false, repeat));
      const nul = [expect.stringMatching(/^nul.key$/), "upsert"];
      // "old", upserted in the scope already, and "known", whose access changed in it already,
      // change again: each earlier change is replaced by one a consumer reads anew; the page's
      // repeat that writes "known" replaces bob's access change by an upsert.
      expect(seen.feed).toEqual(
        repeat
          ? [["new", "upsert"], ["old", "upsert"], nul, ["known", "upsert"]]
          : [["new", "upsert"], ["old", "upsert"], ["known", "access"], nul],
      );
      expect(seen.access).toHaveLength(5);
    }
  });

  it("rolls a failed transaction back entirely, work done through the store itself included", async () => {
    const mirror = `m-${uid()}`;
    const key = `k-${uid()}`;
    await expect(
      opened.store.transaction(async (tx) => {
        await ingestNew(tx, mirror, resource(key));
        await opened.store.mirrors.ensure(mirror, "cfg"); // joins the transaction
        await opened.store.transaction((inner) =>
          inner.pairs.ran({ mirror, userEmail: "ann@example.test", serverInstanceId: "srv-1" }, T1),
        );
        throw new Error("page failed");
      }),
    ).rejects.toThrow("page failed");
    expect(await opened.store.resources.findState(key)).toBeUndefined();
    expect(await hasAnyAccess(key)).toBe(false);
    expect(await changesOf(key)).toEqual([]);
    expect(await opened.store.mirrors.get(mirror)).toBeUndefined();
    expect(await opened.store.pairs.listForMirror(mirror)).toEqual([]);
  });

  it("calls no commit listener for a rolled-back transaction, even one the store itself joined", async () => {
    const mirror = `m-${uid()}`;
    const key = `k-${uid()}`;
    let commits = 0;
    const off = opened.store.onCommit(() => commits++);
    await expect(
      opened.store.transaction(async (tx) => {
        await tx.changes.recordAll([{ key, op: "upsert", at: T1, mirror, scope: "run-1" }]);
        await opened.store.mirrors.ensure(mirror, "cfg");
        throw new Error("page failed");
      }),
    ).rejects.toThrow("page failed");
    off();
    expect(commits).toBe(0);
  });

  it("calls commit listeners after a commit that recorded a change, and only then", async () => {
    const mirror = `m-${uid()}`;
    const key = `k-${uid()}`;
    const seenByListener: Promise<unknown[]>[] = [];
    const off = opened.store.onCommit(() => {
      seenByListener.push(changesOf(key));
    });
    await opened.store.transaction((tx) => tx.mirrors.ensure(mirror, "cfg"));
    expect(seenByListener).toHaveLength(0);
    await opened.store.transaction(async (tx) => {
      await tx.resources.writeAll([resource(key)], null, T1);
      await tx.changes.recordAll([{ key, op: "upsert", at: T1, mirror, scope: "run-1" }]);
    });
    off();
    // On PostgreSQL the commit's NOTIFY may reach the store's own LISTEN before off(): a second
    // wake-up, which the store allows. Each one comes after the commit.
    expect(seenByListener.length).toBeGreaterThanOrEqual(1);
    for (const seen of await Promise.all(seenByListener)) expect(seen).toHaveLength(1);
  });

  it.runIf(dialect.name === "postgres")(
    "notifies LISTEN clients of each mirror's last seq after the commit",
    async () => {
      const listener = new pg.Client({ connectionString: opened.url });
      await listener.connect();
      try {
        await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
        const [m1, m2] = [`m-${uid()}`, `m-${uid()}`];
        const received = new Promise<string[]>((resolve) => {
          const payloads: string[] = [];
          listener.on("notification", (n) => {
            payloads.push(n.payload ?? "");
            if (payloads.length === 2) resolve(payloads);
          });
        });
        await opened.store.transaction(async (tx) => {
          for (const [mirror, key] of [
            [m1, "a"],
            [m1, "b"],
            [m2, "c"],
          ] as const) {
            await tx.changes.recordAll([
              {
                key: `${key}-${mirror}`,
                op: "upsert",
                at: T1,
                mirror,
                scope: "run-1",
              },
            ]);
          }
        });
        const seqs = await opened.query<{ mirror: string; seq: string }>(
          "SELECT mirror, max(seq) AS seq FROM changes WHERE mirror IN (?, ?) GROUP BY mirror",
          m1,
          m2,
        );
        const expected = seqs.map((r) => `${r.mirror}:${r.seq}`).sort();
        expect((await received).sort()).toEqual(expected);
      } finally {
        await listener.end();
      }
    },
  );
});
