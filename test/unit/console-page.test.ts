/**
 * The console's page as the HTTP server serves it (docs/console.md): the
 * three files with their types, a strict Content-Security-Policy, nosniff and no caching, no token
 * needed for them while `/status` and `/v1/` still need it, and nothing else: an unknown name or
 * a path that climbs out of the folder is 404, never a file.
 */
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { CONSOLE_CSP, consoleAssetsDir, createConsolePage } from "../../src/http/console-page.js";
import { createHttpServer, type HttpServer } from "../../src/http-server.js";

const TOKEN = "console-page-token-8d2e";
let server: HttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(page = createConsolePage()): Promise<string> {
  server = createHttpServer({
    registry: new Registry(),
    isReady: () => true,
    getStatus: () => ({ mirrors: [{ mirror: "eng-wiki" }] }),
    token: TOKEN,
    page,
    log: pino({ level: "silent" }),
  });
  const { port } = await server.listen("127.0.0.1", 0);
  return `http://127.0.0.1:${port}`;
}

/** A request whose path goes out exactly as written (fetch would resolve `..` and `%2e` first). */
function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: "GET" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the console's page", () => {
  it("serves the page, its stylesheet and its script, without the token, each with its type", async () => {
    const base = await serve();
    const expected = [
      ["/", "text/html; charset=utf-8", "index.html"],
      ["/?tab=history", "text/html; charset=utf-8", "index.html"],
      ["/console.css", "text/css; charset=utf-8", "console.css"],
      ["/console.js", "text/javascript; charset=utf-8", "console.js"],
    ] as const;
    for (const [path, type, file] of expected) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe(type);
      expect(await res.text(), path).toBe(readFileSync(join(consoleAssetsDir(), file), "utf8"));
    }
  });

  it("sends a strict Content-Security-Policy, nosniff, no caching and no framing", async () => {
    const base = await serve();
    for (const path of ["/", "/console.js", "/console.css"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.headers.get("content-security-policy"), path).toBe(CONSOLE_CSP);
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("cache-control"), path).toBe("no-store");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("referrer-policy"), path).toBe("no-referrer");
      expect(res.headers.get("set-cookie"), path).toBeNull();
    }
    const directives = CONSOLE_CSP.split("; ");
    expect(directives).toContain("default-src 'self'");
    expect(directives).toContain("script-src 'self'");
    expect(CONSOLE_CSP, "no inline script or style, nothing from elsewhere").not.toMatch(/unsafe|\*|http/);
  });

  it("loads its script and stylesheet from the page's own origin, nothing inline", () => {
    const html = readFileSync(join(consoleAssetsDir(), "index.html"), "utf8");
    expect(html).toContain('<script type="module" src="console.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="console.css" />');
    expect(html.match(/<script/g), "one script, no inline one").toHaveLength(1);
    expect(html).not.toMatch(/ on[a-z]+=|style=|https?:/);
    const script = readFileSync(join(consoleAssetsDir(), "console.js"), "utf8");
    expect(script, "server data is written as text, never parsed as markup").not.toMatch(
      /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
    );
    expect(script).not.toMatch(/document\.cookie|localStorage/);
  });

  it("answers 404 for an unknown asset and for any path climbing out of the folder", async () => {
    const base = await serve();
    const paths = [
      "/index.html",
      "/console.js/",
      "/console.js/../console.css",
      "/../package.json",
      "/%2e%2e/package.json",
      "/..%2fpackage.json",
      "/console/../../package.json",
      "//etc/passwd",
      "/favicon.ico",
      "/console.map",
    ];
    for (const path of paths) {
      const res = await rawGet(base, path);
      expect(res, path).toEqual({ status: 404, body: "not found\n" });
    }
  });

  it("refuses methods other than GET and HEAD, and answers HEAD without a body", async () => {
    const base = await serve();
    const post = await fetch(`${base}/`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const head = await fetch(`${base}/console.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("leaves every data endpoint behind the token", async () => {
    const base = await serve();
    for (const path of ["/status", "/v1/passes", "/v1/problems", "/v1/mirrors/eng-wiki/pause"]) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(401);
    }
    const status = await fetch(`${base}/status`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(await status.json()).toEqual({ mirrors: [{ mirror: "eng-wiki" }] });
  });

  it("answers 500 without the reason when a file is missing from the install", async () => {
    const base = await serve(createConsolePage({ dir: "/nonexistent/syncmirror-console" }));
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("internal error\n");
  });
});
