/**
 * The documentation a user's clone holds must hold together: every relative link in README.md,
 * docs/ and the other READMEs points at a file that exists (and at a heading that exists, for
 * links into a Markdown page), and nothing refers to documents outside the repository, which a
 * clone does not have.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
/** Built, installed or produced by a run: not part of what a clone carries. */
const SKIP = new Set(["node_modules", ".git", "dist", "dist-bench", "test-results", "coverage", "data"]);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path) : [path];
  });
}

const files = walk(ROOT);
const pages = files.filter((f) => {
  const rel = relative(ROOT, f);
  return (
    rel.endsWith(".md") && (rel.startsWith("docs/") || rel === "README.md" || rel.endsWith("/README.md"))
  );
});

/** Text outside fenced code blocks and inline code, where a `[x](y)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchors for a page's headings (lower case, punctuation dropped, spaces to hyphens). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading = ""] of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const base = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function brokenLinks(page: string): string[] {
  const text = readFileSync(page, "utf8");
  const broken: string[] = [];
  for (const [, target = ""] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#", 2);
    const file = path === "" ? page : join(dirname(page), decodeURIComponent(path));
    if (!existsSync(file)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (
      anchor &&
      file.endsWith(".md") &&
      statSync(file).isFile() &&
      !anchors(readFileSync(file, "utf8")).has(anchor)
    )
      broken.push(`${target}: no heading with that anchor`);
  }
  return broken;
}

describe("the documentation's links", () => {
  it("finds the pages to check", () => {
    const names = pages.map((p) => relative(ROOT, p));
    expect(names).toEqual(expect.arrayContaining(["README.md", "docs/README.md", "test/README.md"]));
  });

  it.each(pages.map((p) => [relative(ROOT, p), p]))("every relative link in %s resolves", (_, page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it("links every docs/ page from README.md or the docs index", () => {
    const linked = ["README.md", "docs/README.md"].flatMap((index) =>
      [...prose(readFileSync(join(ROOT, index), "utf8")).matchAll(/\]\(([^)#\s]+)/g)].map((m) =>
        join(dirname(join(ROOT, index)), m[1] ?? ""),
      ),
    );
    const unlinked = pages.filter((p) => relative(ROOT, p).startsWith("docs/") && !linked.includes(p));
    expect(unlinked.map((p) => relative(ROOT, p))).toEqual([]);
  });
});

describe("the repository", () => {
  // Spelled in pieces so that this file does not match itself.
  const outside = [`../${"shared"}`, `${"SPEC"}.md`, `${"API"}.md`];

  it("refers to no document outside it (a clone has only what the repository holds)", () => {
    const offenders = files.flatMap((file) => {
      if (statSync(file).size > 5_000_000) return [];
      const text = readFileSync(file, "utf8");
      return outside.filter((s) => text.includes(s)).map((s) => `${relative(ROOT, file)}: ${s}`);
    });
    expect(offenders).toEqual([]);
  });
});
