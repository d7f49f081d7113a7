/**
 * The console page (docs/console.md) in a real browser, from the outside: every request it makes
 * goes to the daemon that served it and none carries or sets a cookie; signed in, it shows the pass
 * history and the open problems, and its controls act (run a pass now, which clears the problem it
 * fixed; pause and resume, as `/status` reports); a daemon with no HTTP token set refuses whatever
 * token is entered, so the page shows nothing, although `/status` is open on its loopback listener.
 * SQLite only: the page reads the same endpoints on either store.
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import { CHROMIUM_PATH, useChromium } from "../../helpers/browser.js";
import { authorizedJson, configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const U1 = "user1@example.com";
const SERVICE_TEXT = "Notion answered 429: too many requests for workspace Acme";

const get = <T>(d: DaemonProcess, path: string) => authorizedJson<T>(d.port, path);

async function signIn(page: Page, token: string): Promise<void> {
  await page.locator("#token").fill(token);
  await page.getByRole("button", { name: "Open the console" }).click();
}

const poll = <T>(value: () => Promise<T>, message: string) =>
  expect.poll(value, { message, timeout: 15_000 });

describe.skipIf(CHROMIUM_PATH === undefined)("the console page, from the outside", () => {
  const suite = daemonSuite();
  const browser = useChromium();

  it("talks only to its daemon, without cookies; shows history and problems; runs a pass, pauses and resumes", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 20 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    h.sim.setOutcome(
      { user: U1, server_instance_id: notion },
      { task: "FAILED", error: SERVICE_TEXT, times: 1 },
    );
    expect((await h.sync()).outcome).toBe("partial");
    const d = await suite.daemon(h);
    const origin = `http://127.0.0.1:${d.port}`;
    const [failedPass] = (await get<HistoryJson>(d, "/v1/passes")).passes;

    const context = await browser().newContext();
    const page = await context.newPage();
    const requested: string[] = [];
    const setCookies: string[] = [];
    const cookiesSent: string[] = [];
    page.on("request", async (r) => {
      requested.push(r.url());
      const cookie = await r.headerValue("cookie");
      if (cookie !== null) cookiesSent.push(`${r.url()}: ${cookie}`);
    });
    page.on("response", async (r) => {
      const cookie = await r.headerValue("set-cookie");
      if (cookie !== null) setCookies.push(`${r.url()}: ${cookie}`);
    });
    await page.goto(`${origin}/`);
    await poll(() => page.locator("#token").isVisible(), "the token prompt").toBe(true);
    const beforeSignIn = requested.length;
    expect(beforeSignIn, "the page and its files").toBeGreaterThanOrEqual(3);

    await signIn(page, HTTP_TOKEN);
    const card = page.locator('article.card[data-mirror="main"]');
    await card.waitFor();
    const pass = page.locator(`article.pass[data-pass="${failedPass?.id}"]`);
    const passText = await pass.innerText();
    expect(passText).toContain(`trigger ${failedPass?.trigger_id}`);
    expect(passText).toContain("partial");
    expect(passText).toContain(`FAILED: ${SERVICE_TEXT}`);
    expect(passText).toContain(U1);
    const problem = page.locator('#problems tr[data-kind="failed_source"]');
    expect(await problem.count()).toBe(1);
    expect(await problem.innerText()).toContain(U1);
    expect(await problem.innerText()).toContain(SERVICE_TEXT);

    await card.getByRole("button", { name: "Run incremental now" }).click();
    await poll(() => page.locator("article.pass").count(), "the requested pass on the page").toBe(2);
    const ran = await until(async () => {
      const [newest] = (await get<HistoryJson>(d, "/v1/passes?limit=1")).passes;
      return newest?.state === "done" && newest;
    }, "the requested pass to end");
    expect(ran.outcome).toBe("succeeded");
    await page.getByRole("button", { name: "Refresh" }).click();
    await poll(
      () => page.locator(`article.pass[data-pass="${ran.id}"]`).innerText(),
      "the pass done",
    ).toContain("succeeded");
    await poll(() => page.locator("#problems tr").count(), "the failed source cleared").toBe(0);

    const paused = async () =>
      (await get<{ mirrors: { paused: boolean }[] }>(d, "/status")).mirrors[0]?.paused;
    await card.getByRole("button", { name: "Pause" }).click();
    await poll(() => card.locator("dl").innerText(), "paused on the page").toMatch(/Paused\s+since/);
    expect(await paused()).toBe(true);
    expect(await d.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(1);
    await card.getByRole("button", { name: "Resume" }).click();
    await poll(() => card.locator("dl").innerText(), "resumed on the page").toMatch(/Paused\s+no/);
    expect(await paused()).toBe(false);

    expect(requested.length).toBeGreaterThan(beforeSignIn);
    expect(
      requested.filter((url) => new URL(url).origin !== origin),
      "nothing from elsewhere",
    ).toEqual([]);
    expect(setCookies).toEqual([]);
    expect(cookiesSent).toEqual([]);
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });

  it("shows nothing on a daemon with no HTTP token set, whatever token is entered", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 5 } }));
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    expect((await h.sync()).outcome).toBe("succeeded");
    const d = await suite.daemon(h);
    const origin = `http://127.0.0.1:${d.port}`;
    expect((await fetch(`${origin}/status`)).status, "open on a loopback listener").toBe(200);
    for (const [method, path] of [
      ["GET", "/v1/passes"],
      ["GET", "/v1/problems"],
      ["POST", "/v1/mirrors/main/pause"],
      ["POST", "/v1/mirrors/main/trigger"],
    ])
      expect((await fetch(`${origin}${path}`, { method })).status, `${method} ${path}`).toBe(401);

    const page = await browser().newPage();
    await page.goto(`${origin}/`);
    await signIn(page, "anything");
    await poll(() => page.locator("#login-message").textContent(), "the refusal").toContain("(401)");
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect((await page.locator("#replicas, #mirrors, #problems, #passes").allTextContents()).join("")).toBe(
      "",
    );
    await page.close();
  });
});
