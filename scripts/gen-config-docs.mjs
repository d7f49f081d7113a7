/**
 * `npm run docs`: writes docs/configuration.md from the config schema (scripts/config-docs.ts,
 * bundled with esbuild, which the build already uses, since Node 20 runs no TypeScript).
 * `npm run docs -- --check` writes nothing and exits 1 when the committed file is stale.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const TARGET = "docs/configuration.md";

const dir = mkdtempSync(join(tmpdir(), "syncmirror-docs-"));
try {
  const outfile = join(dir, "config-docs.mjs");
  await build({
    entryPoints: ["scripts/config-docs.ts"],
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
  const { renderConfigDocs } = await import(pathToFileURL(outfile).href);
  const text = renderConfigDocs();
  if (process.argv.includes("--check")) {
    const current = readFileSync(TARGET, "utf8");
    if (current !== text) {
      console.error(`${TARGET} is stale: run npm run docs and commit it`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(TARGET, text);
    console.log(`wrote ${TARGET}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
