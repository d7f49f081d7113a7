/**
 * Hostile export content: huge titles, control characters, lone surrogates and invalid UTF-8,
 * 10 MB of content, keys of unusual characters, deeply nested fields, resources of the wrong
 * shape. Each resource is stored faithfully (compared with the bytes the mirror was served, as far
 * as the store can hold them: see `held`) or rejected alone with a reason in the log; the run is
 * never crashed by one resource.
 */
import { afterEach, describe, expect, it } from "vitest";
import { databaseProblems, invalidUtf8Cells } from "../../helpers/db-snapshot.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness | undefined;
let proxy: RewritingProxy | undefined;
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

const USER = "user1@example.com";
const CONTROL =
  "nul\u0000 soh\u0001 bell\u0007 esc\u001b[31mred\u001b[0m cr\r lf\n tab\t del\u007f ls\u2028 ps\u2029";

/** One user, no generated documents, every request through a rewriting proxy. */
async function setup(): Promise<{ h: Harness; proxy: RewritingProxy }> {
  proxy = await startRewritingProxy();
  h = await createHarness({ sim: { users: 1, docs: 0 }, api: { base_url: proxy.baseUrl } });
  proxy.target = h.sim.baseUrl;
  return { h, proxy };
}

function nested(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = { [`level ${i}`]: v, list: [i] };
  return v;
}

type Row = Record<string, string | null>;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A served value as the suite's store holds it (docs/reference/database.md): PostgreSQL text and
 * jsonb cannot hold NUL, nor jsonb an unpaired surrogate, so each is stored as U+FFFD, in strings
 * and in object keys alike; SQLite holds the value as given.
 */
function held<T>(value: T): T {
  if (TEST_DIALECT === "sqlite") return value;
  const fix = (v: unknown): unknown => {
    if (typeof v === "string") return v.replaceAll("\u0000", "\uFFFD").replace(LONE_SURROGATE, "\uFFFD");
    if (Array.isArray(v)) return v.map(fix);
    if (v !== null && typeof v === "object")
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [fix(k), fix(x)]));
    return v;
  };
  return fix(value) as T;
}

/** Every resource of every page served, parsed back as the mirror parsed it. */
function servedResources(p: RewritingProxy): Record<string, unknown>[] {
  return p.served.flatMap((b) => JSON.parse(b.toString("utf8")).resources as Record<string, unknown>[]);
}

function expectStoredAsServed(harness: Harness, served: Record<string, unknown>): void {
  const [row] = harness.query<Row>("SELECT * FROM resources WHERE key = ?", held(served.key));
  expect(row, `row for ${String(served.key).slice(0, 80)}`).toBeDefined();
  const r = row as Row;
  const content = served.content as { text: string } | null;
  expect(r.native_id).toBe(held(served.native_id));
  expect(r.title).toBe(held(served.title));
  expect(
    r.content_text === held(content?.text ?? null),
    "content_text is byte-for-byte the served text",
  ).toBe(true);
  expect(r.content_hash).toBe(served.content_hash);
  expect(JSON.parse(r.fields ?? "null")).toEqual(held(served.fields));
  expect(JSON.parse(r.metadata ?? "null")).toEqual(held(served.metadata));
}

describe("hostile export content", () => {
  it("stores huge titles, control characters, 10 MB of content and odd field names faithfully", async () => {
    const { h, proxy } = await setup();
    const [notion, github] = h.sim.servers.map((s) => s.server_instance_id) as [string, string];
    const add = (server: string, o: Record<string, unknown>) =>
      h.sim.docs.add({
        server_instance_id: server,
        visibleTo: [USER],
        modifiedAt: "2026-01-01T00:00:00Z",
        ...o,
      });
    add(notion, { title: `Huge ${"Ü title ".repeat(50_000)}`, content: "short" });
    add(notion, { title: `Control ${CONTROL}`, content: CONTROL.repeat(100) });
    add(github, { title: "Ten megabytes", content: "0123456789abcdé\n".repeat(655_360) });
    add(github, {
      title: "Odd field names",
      fields: JSON.parse(
        '{"__proto__": {"polluted": true}, "": "empty", "a.b": 1, "$where": "1", "k\\u0000": [null, {}]}',
      ),
    });
    add(github, { title: "Nested 300 deep", fields: nested(300) });

    const summary = await h.sync();
    expect(summary.outcome, summary.message).toBe("succeeded");
    expect(summary.counts.upserted).toBe(5);
    const served = servedResources(proxy);
    expect(served).toHaveLength(5);
    for (const r of served) expectStoredAsServed(h, r);
    expect(({} as Record<string, unknown>).polluted, "no prototype pollution").toBeUndefined();
    expect(invalidUtf8Cells(h)).toEqual([]);
    expect(databaseProblems(h)).toEqual([]);
  });

  it("stores keys and native ids of unusual characters as given", async () => {
    const { h, proxy } = await setup();
    const notion = h.sim.servers[0]?.server_instance_id as string;
    for (let i = 0; i < 3; i++)
      h.sim.docs.add({ server_instance_id: notion, visibleTo: [USER], title: `doc ${i}` });
    const odd = [
      `weird id/with spaces?&#%20'quotes'"dq";DROP TABLE resources;--`,
      "📄 Ünïcødé\u0000nul\nnewline\\back",
      "x".repeat(10_000),
    ];
    proxy.rewrites.push((body) => {
      const page = JSON.parse(body);
      page.resources.forEach((r: Record<string, unknown>, i: number) => {
        r.native_id = odd[i];
        r.key = `notion:${notion}:${odd[i]}`;
      });
      return JSON.stringify(page);
    });

    const summary = await h.sync();
    expect(summary.outcome, summary.message).toBe("succeeded");
    for (const r of servedResources(proxy)) expectStoredAsServed(h, r);
    const keys = h.query<{ key: string }>("SELECT key FROM resource_access WHERE user_email = ?", USER);
    expect(keys.map((k) => k.key).sort()).toEqual(odd.map((o) => held(`notion:${notion}:${o}`)).sort());
    expect(databaseProblems(h)).toEqual([]);
  });

  it("stores lone surrogates and invalid UTF-8 as U+FFFD in text; JSON columns keep the escape where they can (SQLite)", async () => {
    const { h, proxy } = await setup();
    const notion = h.sim.servers[0]?.server_instance_id as string;
    h.sim.docs.add({
      server_instance_id: notion,
      visibleTo: [USER],
      title: "lone \ud800 high",
      content: "low \udfff here",
      fields: { note: "pair \ud83d alone" },
    });
    h.sim.docs.add({ server_instance_id: notion, visibleTo: [USER], title: "RAW-BYTES-HERE" });
    // Bytes that are not UTF-8 at all, straight into a title on the wire.
    proxy.rewrites.push((body) => {
      const at = body.indexOf("RAW-BYTES-HERE");
      const rest = body.slice(at + "RAW-BYTES-HERE".length);
      return Buffer.concat([
        Buffer.from(body.slice(0, at)),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from(rest),
      ]);
    });

    const r = await h.cli(["sync"]);
    expect(r.code, r.stderr).toBe(0);
    const warnings = r.stderr.split("\n").filter((l) => l.includes("unpaired UTF-16 surrogates"));
    expect(warnings.map((l) => JSON.parse(l).key)).toEqual([expect.stringMatching(/^notion:/)]);
    const rows = h.query<Row>("SELECT title, content_text, fields FROM resources ORDER BY title");
    expect(rows.map((r) => r.title).sort()).toEqual(["lone \ufffd high", "\ufffd\ufffd\ufffd"].sort());
    const lone = rows.find((r) => r.title?.startsWith("lone")) as Row;
    expect(lone.content_text).toBe("low \ufffd here");
    expect(JSON.parse(lone.fields ?? "null")).toEqual(held({ note: "pair \ud83d alone" }));
    expect(invalidUtf8Cells(h), "every text cell is valid UTF-8 for other readers").toEqual([]);
    expect(databaseProblems(h)).toEqual([]);
  });

  it("rejects only the resources it cannot store, each with a reason, and ingests the rest (exit 1, partial)", async () => {
    const { h, proxy } = await setup();
    const notion = h.sim.servers[0]?.server_instance_id as string;
    for (let i = 0; i < 5; i++)
      h.sim.docs.add({ server_instance_id: notion, visibleTo: [USER], title: `doc ${i}` });
    const deep = `${'{"d":'.repeat(100_000)}1${"}".repeat(100_000)}`;
    proxy.rewrites.push((body) => {
      const page = JSON.parse(body);
      const [a, b, c] = page.resources as Record<string, unknown>[];
      delete (a as Record<string, unknown>).content_hash;
      (b as Record<string, unknown>).key = 12345;
      (c as Record<string, unknown>).fields = "__DEEP__";
      return JSON.stringify(page).replace('"__DEEP__"', deep);
    });

    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary.outcome, JSON.stringify(summary.errors)).toBe("partial");
    expect(summary.counts).toMatchObject({ upserted: 2, rejected: 3 });
    const rejected = r.stderr
      .split("\n")
      .filter((l) => l.includes("resource rejected"))
      .map((l) => JSON.parse(l));
    expect(rejected).toHaveLength(3);
    for (const line of rejected) expect(line.reason).toEqual(expect.any(String));
    expect(rejected.map((l) => l.path)).toEqual(expect.arrayContaining(["content_hash", "key", "fields"]));
    expect(h.query("SELECT key FROM resources")).toHaveLength(2);
    expect(
      h.query("SELECT 1 FROM pairs WHERE watermark IS NOT NULL"),
      "a source with a rejected resource does not advance",
    ).toEqual([]);
    expect(databaseProblems(h)).toEqual([]);
  });
});
