/**
 * The package `npm pack` makes from a built clone, as a user installs it (`npm install
 * ./syncmirror-*.tgz`, then `npx syncmirror`): the command, the console's files and the migrations
 * it reads at run time; every file of the repository its messages send the user to; and nothing
 * private (tests, environment files, databases, a local config).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_PATH } from "../../../src/config.js";
import { buildOnce } from "../daemon/setup.js";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> };

/** Every file of `dir` (relative to the repository), as `a/b/c` paths. */
const filesUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(ROOT.length + 1));

let packed: string[] = [];

beforeAll(() => {
  buildOnce();
  const [tarball] = JSON.parse(
    execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }),
  ) as { files: { path: string }[] }[];
  packed = tarball?.files.map((f) => f.path) ?? [];
});

describe("the package (npm pack)", () => {
  it("ships the syncmirror command, the console's files and every migration", () => {
    expect(pkg.bin).toEqual({ syncmirror: "dist/cli.js" });
    expect(packed).toContain("dist/cli.js");
    const consoleFiles = filesUnder("src/http/console").map((f) => f.replace("src/http/", "dist/"));
    const migrations = filesUnder("migrations").filter((f) => /\.sql$|_journal\.json$/.test(f));
    expect(consoleFiles.length * migrations.length).toBeGreaterThan(0);
    expect(packed).toEqual(expect.arrayContaining([...consoleFiles, ...migrations]));
  });

  it("ships every file of the repository the CLI's messages point to", () => {
    const dist = filesUnder("dist").filter((f) => f.endsWith(".js"));
    const named = new Set(
      dist.flatMap((f) =>
        [
          ...readFileSync(join(ROOT, f), "utf8").matchAll(
            /\b(?:docs|config)\/[\w./-]+\.(?:md|ya?ml|json)\b/g,
          ),
        ].map((m) => m[0]),
      ),
    );
    // The user's own config is where the CLI looks for one, not a file the repository carries.
    named.delete(DEFAULT_CONFIG_PATH);
    const inRepository = [...named].filter((path) => existsSync(join(ROOT, path)));
    expect(inRepository).toEqual(
      expect.arrayContaining(["config/syncmirror.example.yaml", "docs/configuration.md"]),
    );
    expect(inRepository.filter((path) => !packed.includes(path))).toEqual([]);
  });

  it("leaves out tests, environment files, databases and a local config", () => {
    const privateFiles = packed.filter(
      (f) =>
        /^(test|bench|\.ci)\//.test(f) ||
        /(^|\/)\.env/.test(f) ||
        /\.db(-wal|-shm|-journal|\.lock)?$/.test(f) ||
        f === DEFAULT_CONFIG_PATH,
    );
    expect(privateFiles).toEqual([]);
  });
});
