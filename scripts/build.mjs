/**
 * `npm run build`: type-check with tsc, then bundle src/cli.ts into dist/ with esbuild.
 *
 * One ESM entry (dist/cli.js) and a chunk per lazily loaded command: Node 20 resolves, reads and
 * links each module of an unbundled tree on its own, and the ~280 files behind `sync` (zod,
 * drizzle, ours) cost every process about 0.3 s of CPU and 0.25 s of start-up before any work
 * (bench/RESULTS.md, issue 10). Packages stay in node_modules when bundling would break them:
 * better-sqlite3 loads a native addon, pg an optional one, and pino resolves its worker files
 * (transports) next to its own sources. The console's page (plain HTML, CSS and a script, no build
 * step of their own) is copied to dist/console/, beside the chunks that serve it.
 */
import { cpSync, rmSync } from "node:fs";
import { build } from "esbuild";

const OUT = "dist";

// Hashed chunk names change with their contents: clear what an earlier build left.
rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: ["src/cli.ts"],
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  packages: "bundle",
  external: ["better-sqlite3", "pg", "pg-native", "pino"],
  // Bundled CommonJS packages (undici, prom-client, yaml) call require(): give ESM output one.
  banner: {
    js: "import { createRequire as __syncmirrorRequire } from 'node:module'; const require = __syncmirrorRequire(import.meta.url);",
  },
  sourcemap: "linked",
  logLevel: "warning",
});
cpSync("src/http/console", `${OUT}/console`, { recursive: true });
