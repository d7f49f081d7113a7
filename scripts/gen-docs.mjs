/**
 * `npm run docs`: regenerates the documentation generated from the code (scripts/docs.ts lists
 * it: docs/configuration.md from the config schema, the commands of docs/reference/cli.md from
 * the CLI's help). The TypeScript is bundled with esbuild, which the build already uses, since
 * Node 20 runs no TypeScript. `npm run docs -- --check` writes nothing and exits 1 when a
 * committed file is stale (test/unit/generated-docs.test.ts checks the same).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const dir = mkdtempSync(join(tmpdir(), "syncmirror-docs-"));
try {
  const outfile = join(dir, "docs.mjs");
  await build({
    entryPoints: ["scripts/docs.ts"],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20.19",
    // Bundled CommonJS packages (yaml) call require(): give the ESM output one, as build.mjs does.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: "warning",
  });
  const { GENERATED } = await import(pathToFileURL(outfile).href);
  const check = process.argv.includes("--check");
  for (const { file, render } of GENERATED) {
    const current = readFileSync(file, "utf8");
    const text = render(current);
    if (text === current) continue;
    if (check) {
      console.error(`${file} is stale: run npm run docs and commit it`);
      process.exitCode = 1;
    } else {
      writeFileSync(file, text);
      console.log(`wrote ${file}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
