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

/**
 * zod re-exports its ~60 translations of its messages as `z.locales`, which esbuild cannot drop
 * from a namespace used as a value: about 360 kB parsed by every process that validates anything.
 * Nothing here switches language (English is zod's own default, imported on its own), so that
 * re-export is built empty: about 20 ms less CPU for each command's start-up.
 */
const zodEnglishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes("/node_modules/zod/")
        ? { path: "zod-locales", namespace: "zod-locales" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

/**
 * undici's index loads all of undici (fetch, WebSocket, EventSource, caches, cookies, mocks,
 * proxies), and its cookies module wakes Node's own copy of undici too: about 30 ms of every
 * process's start-up. syncmirror uses an Agent and `Dispatcher#request` only, so in the bundle
 * "undici" is those two modules of the same package, wired as undici's index wires them. Tests
 * run the sources against the whole package.
 */
const undiciAgentOnly = {
  name: "undici-agent-only",
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) =>
      args.importer.includes("/node_modules/")
        ? undefined
        : { path: "undici-agent", namespace: "undici-agent" },
    );
    b.onLoad({ filter: /.*/, namespace: "undici-agent" }, () => ({
      contents: [
        'import Agent from "undici/lib/dispatcher/agent.js";',
        'import Dispatcher from "undici/lib/dispatcher/dispatcher.js";',
        'import api from "undici/lib/api/index.js";',
        "Object.assign(Dispatcher.prototype, api);",
        "export { Agent };",
      ].join("\n"),
      loader: "js",
      resolveDir: process.cwd(),
    }));
  },
};

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
  plugins: [zodEnglishOnly, undiciAgentOnly],
  logLevel: "warning",
});
cpSync("src/http/console", `${OUT}/console`, { recursive: true });
