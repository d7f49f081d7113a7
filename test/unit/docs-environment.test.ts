/**
 * The environment table of docs/operations.md: one row per variable, each with one meaning, and
 * every `SYNCMIRROR_*` variable the code reads documented there (the fault-injection seams in the
 * text below it, as variables never to set).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const operations = readFileSync(join(ROOT, "docs", "operations.md"), "utf8");
const section = operations.slice(
  operations.indexOf("## Environment"),
  operations.indexOf("\n## ", operations.indexOf("## Environment") + 1),
);
/** `demo` puts its own simulator's token in this variable for its own config: nobody sets it. */
const INTERNAL = new Set(["SYNCMIRROR_DEMO_TOKEN"]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

describe("the environment variables' documentation", () => {
  const rows = [...section.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]);

  it("gives each variable one row", () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((name, i) => rows.indexOf(name) !== i)).toEqual([]);
  });

  it("documents every SYNCMIRROR_ variable the code reads", () => {
    const read = new Set(
      sources(join(ROOT, "src")).flatMap((f) => readFileSync(f, "utf8").match(/SYNCMIRROR_[A-Z_]+/g) ?? []),
    );
    const missing = [...read].filter((name) => !INTERNAL.has(name) && !section.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
