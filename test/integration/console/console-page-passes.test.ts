/**
 * The console page's pass history (docs/console.md) in a real browser, against the HTTP server with
 * the page and fixed `/v1/` answers: each entry shows what SPEC's history lists (mirror, mode,
 * since, trigger id, replica, started and ended, outcome and message, keys and counts, runs,
 * sources and skipped pairs by status, and each error with its time, run, user, source, replica and
 * the service's text), and an entry still in flight says so.
 */
import { pino } from "pino";
import type { Browser } from "playwright-core";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import { createConsolePage } from "../../../src/http/console-page.js";
import { createHttpServer, type HttpServer, jsonReply } from "../../../src/http-server.js";
import { CHROMIUM_PATH, launchChromium } from "../../helpers/browser.js";
import { donePass as done, inFlightPass as inFlight } from "../../helpers/pass-fixtures.js";

const TOKEN = "console-passes-token-51c0";

const history: HistoryJson = { passes: [inFlight, done], next_before: null, pending_sweep_approvals: [] };
const problems: ProblemsJson = { counts: {}, problems: [], truncated: false, pending_sweep_approvals: [] };

describe.skipIf(CHROMIUM_PATH === undefined)("the console page's pass history", () => {
  let browser: Browser;
  let server: HttpServer;
  let base: string;
  beforeAll(async () => {
    server = createHttpServer({
      registry: new Registry(),
      isReady: () => true,
      getStatus: () => ({ mirrors: [], retired_mirrors: [], replicas: [] }),
      token: TOKEN,
      routes: [
        async (req) => {
          const path = new URL(req.url ?? "/", "http://localhost").pathname;
          if (path === "/v1/passes") return jsonReply(200, history);
          if (path === "/v1/problems") return jsonReply(200, problems);
          return undefined;
        },
      ],
      page: createConsolePage(),
      log: pino({ level: "silent" }),
    });
    base = `http://127.0.0.1:${(await server.listen("127.0.0.1", 0)).port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it("shows every field of a pass: since, trigger id, replica, started and ended, skipped pairs, and where each error was met", async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/`);
    await page.locator("#token").fill(TOKEN);
    await page.getByRole("button", { name: "Open the console" }).click();
    const entry = page.locator('article.pass[data-pass="7"]');
    await entry.waitFor();
    const text = await entry.innerText();
    expect(text).toContain("#7 eng-wiki incremental");
    expect(text).toContain("partial");
    expect(text).toContain(done.message);
    expect(text).toContain(`trigger ${done.trigger_id}`);
    expect(text).toContain("since 2026-11-25 18:58:09 UTC");
    expect(text).toContain("started 2026-11-25 19:03:10 UTC");
    expect(text).toContain("ended 2026-11-25 19:04:12 UTC");
    expect(text).toMatch(/1 min 2 s/);
    expect(text).toContain("on vm-a:5275, finished on vm-b:812");
    expect(text).toContain("resumed");
    expect(text).toContain("keys 3 new, 2 changed, 11 unchanged");
    expect(text).toContain("5 upserted, 11 unchanged, 1 rejected");
    expect(text).toContain("runs: 2 completed, 1 failed");
    expect(text).toContain("sources: 3 ok, 2 no results");
    expect(text).toContain("skipped pairs: 1 not accessible");
    const errors = await entry.locator("ul.errors li").allInnerTexts();
    expect(errors).toHaveLength(2);
    expect(errors[0]).toContain("2026-11-25 19:03:11 UTC");
    expect(errors[0]).toContain("on vm-a:5275");
    expect(errors[0]).toContain("connect ECONNREFUSED 127.0.0.1:1");
    expect(errors[1]).toContain("user1@example.com · notion · run e05e8972-6951-48f8-9dc7-6c336ae00c97");
    expect(errors[1]).toContain("on vm-b:812");
    expect(errors[1]).toContain("FAILED: Notion API answered 502 Bad Gateway");

    const running = await page.locator('article.pass[data-pass="8"]').innerText();
    expect(running).toContain("in flight");
    expect(running).toContain("trigger not sent yet");
    expect(running).toContain("no since (full)");
    expect(running).toContain("not ended");
    await page.close();
  });
});
