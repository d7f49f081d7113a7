/**
 * The operator console's page (docs/console.md): `GET /` and its
 * stylesheet and script, plain files shipped beside the bundle (`src/http/console/`, copied to
 * `dist/console/` by scripts/build.mjs). They hold no data, so they are served without the token;
 * the script asks for it and sends it with every fetch of the JSON endpoints, which require it.
 * Only the names listed here are served: no part of a request path reaches the file system.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Reply, RouteHandler } from "../http-server.js";

/** Path -> file in the assets folder and its type. Exact match: `/console.js/..` is not here. */
const ASSETS: ReadonlyMap<string, { file: string; contentType: string }> = new Map([
  ["/", { file: "index.html", contentType: "text/html; charset=utf-8" }],
  ["/console.css", { file: "console.css", contentType: "text/css; charset=utf-8" }],
  ["/console.js", { file: "console.js", contentType: "text/javascript; charset=utf-8" }],
]);

/**
 * Everything from this origin, nothing inline, nothing from elsewhere: server data that ever slipped
 * into the page as markup could still not run, load or send anything. No framing (clickjacking on
 * the controls), no `<base>` rewriting where the script fetches.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const HEADERS = Object.freeze({
  "Content-Security-Policy": CONSOLE_CSP,
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
});

/**
 * Where the files are: next to this module in the source tree, next to the bundle's chunks in
 * `dist/` (esbuild keeps `import.meta.url` of the chunk this code lands in).
 */
export function consoleAssetsDir(): string {
  return fileURLToPath(new URL("console/", import.meta.url));
}

/** Answers GET/HEAD of the console's paths (the server refuses other methods first); undefined for the rest. */
export function createConsolePage(options: { dir?: string } = {}): RouteHandler {
  const dir = options.dir ?? consoleAssetsDir();
  // Read once: the files change only with the package.
  const loaded = new Map<string, Promise<string>>();
  const load = (file: string): Promise<string> => {
    let text = loaded.get(file);
    if (text === undefined) {
      text = readFile(join(dir, file), "utf8");
      // A failed read (a broken install) is retried by the next request, not remembered.
      text.catch(() => loaded.delete(file));
      loaded.set(file, text);
    }
    return text;
  };
  return async (req): Promise<Reply | undefined> => {
    const asset = ASSETS.get((req.url ?? "/").split("?", 1)[0] ?? "");
    if (asset === undefined) return undefined;
    return { status: 200, contentType: asset.contentType, body: await load(asset.file), headers: HEADERS };
  };
}
