/**
 * The console page (docs/console.md) in a real browser, used from the keyboard, against a daemon
 * that goes away: a token no HTTP header can carry is refused on the spot, with why; a control pressed with Enter leaves the focus on that control of that mirror
 * (Pause becomes Resume in the same place), also across the page's own refresh, which rebuilds
 * the cards; a control given while the daemon is down says under the buttons that it failed and
 * why, in words a person understands; the daemon restarted with another token refuses the kept one
 * at the next refresh, and the page drops everything it showed. SQLite only, like the other page tests.
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { CHROMIUM_PATH, useChromium } from "../../helpers/browser.js";
import { configureConsumers, HTTP_TOKEN, HTTP_TOKEN_ENV } from "../../helpers/consumers.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const poll = <T>(value: () => Promise<T>, message: string) =>
  expect.poll(value, { message, timeout: 15_000 });

/** The control that has the keyboard's focus: its mirror and its text. */
const focused = (page: Page) =>
  page.evaluate<string | null>(
    `(() => {
      const e = document.activeElement;
      return e?.tagName === "BUTTON" ? e.dataset.mirror + ": " + e.textContent : (e?.tagName ?? null);
    })()`,
  );

describe.skipIf(CHROMIUM_PATH === undefined)("the console page from the keyboard", () => {
  const suite = daemonSuite();
  const browser = useChromium();

  it("says why a pasted token cannot be sent; keeps the focus on the control pressed; says a control failed while the daemon is down; drops the data when a restarted daemon refuses the token", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 5 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    expect((await h.sync()).outcome).toBe("succeeded");
    const d = await suite.daemon(h);

    const page = await browser().newPage();
    await page.clock.install();
    await page.goto(`http://127.0.0.1:${d.port}/`);
    // Pasted with an invisible character no HTTP header can carry: the browser would not send it.
    await page.locator("#token").fill(`${HTTP_TOKEN}\u200b`);
    await page.keyboard.press("Enter");
    await poll(() => page.locator("#login-message").textContent(), "why it is not sent").toBe(
      "This token has a character that cannot be sent in an HTTP header (an invisible one, pasted with it?). Enter the value of the variable named by http.token_env (default SYNCMIRROR_HTTP_TOKEN).",
    );
    expect(await page.locator("#notice").isHidden()).toBe(true);
    expect(await page.evaluate<number>("sessionStorage.length"), "nothing kept").toBe(0);
    await page.locator("#token").fill(HTTP_TOKEN);
    await page.keyboard.press("Enter");
    const card = page.locator('article.card[data-mirror="main"]');
    await card.waitFor();

    await card.getByRole("button", { name: "Pause" }).focus();
    await page.keyboard.press("Enter");
    await poll(() => card.locator(".message").textContent(), "the reply").toContain("paused main");
    expect(await focused(page), "the focus where the key was pressed").toBe("main: Resume");
    const refreshed = await page.locator("#refreshed").textContent();
    await page.clock.runFor(10_000);
    await poll(() => page.locator("#refreshed").textContent(), "the page's own refresh").not.toBe(refreshed);
    expect(await focused(page), "the focus kept across a refresh").toBe("main: Resume");
    await page.keyboard.press("Enter");
    await poll(() => card.locator(".message").textContent(), "the reply").toContain("resumed main");
    expect(await focused(page)).toBe("main: Pause");

    await d.stop();
    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("main: Run incremental now");
    await page.keyboard.press("Enter");
    await poll(() => card.locator(".message").textContent(), "the failure under the buttons").toBe(
      "trigger failed: the daemon did not answer (is it running, and reachable from this browser?)",
    );
    // The reply is shown before the page's reload after the control, which sets the notice.
    await poll(() => page.locator("#notice").textContent(), "the notice above the cards").toBe(
      "Could not read the daemon: the daemon did not answer (is it running, and reachable from this browser?)",
    );
    expect(await card.count(), "what it last read stays, under the notice").toBe(1);

    await suite.daemon(h, {
      env: { [HTTP_TOKEN_ENV]: "another-token", SYNCMIRROR_HTTP_LISTEN: `127.0.0.1:${d.port}` },
    });
    await page.getByRole("button", { name: "Refresh" }).click();
    await poll(() => page.locator("#login-message").textContent(), "the refusal").toContain(
      "refused this token (401)",
    );
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect(await page.locator("#notice").isHidden()).toBe(true);
    expect((await page.locator("#replicas, #mirrors, #problems, #passes").allTextContents()).join("")).toBe(
      "",
    );
    expect(await page.evaluate<number>("sessionStorage.length")).toBe(0);
    await page.close();
  });
});
