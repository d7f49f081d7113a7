/**
 * The operator console (docs/console.md), the web page, in a real browser (Debian's chromium through
 * playwright-core) against `syncmirror run` and the simulator: the page shows nothing until the
 * token is given (and a wrong one is refused with the prompt again); with it, the mirrors and a
 * failed pass's error in the service's words (markup in them shown as text); a held sweep approved on the page is applied by
 * the next full pass, asked for on the page too; a mirror paused on the page has its scheduled
 * ticks skipped as `paused` until it is resumed there. The page reads the same endpoints on either
 * store, so this runs on SQLite only. One browser for the file; a screenshot of each layout
 * (laptop, phone) lands in test-results/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import type { RetiredMirrorStatus } from "../../../src/sync/status-report.js";
import { CHROMIUM_PATH, launchChromium } from "../../helpers/browser.js";
import { authorizedJson, configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { useMirrors } from "../../helpers/replicas.js";
import { daemonSuite, EVERY_SECOND, editConfig, NEVER, setCrons } from "../daemon/setup.js";

const ARTIFACTS = join(import.meta.dirname, "..", "..", "..", "test-results");
const U1 = "user1@example.com";
/** The service's error text, with markup in it that must show as text and never run. */
const FAILURE = 'quota exceeded on <b>Roadmap</b><img src="x" onerror="window.pwned = 1">';

const api = <T>(d: DaemonProcess, path: string) => authorizedJson<T>(d.port, path);

const triggerCount = (h: Harness) => h.query("SELECT id FROM triggers").length;

/** What the page shows as data: the text of its mirrors, problems and passes. */
const shownData = async (page: Page) =>
  (await page.locator("#replicas, #mirrors, #problems, #passes").allTextContents()).join("");

/** Waits for what the page shows (it answers a click with a few requests to the daemon). */
const poll = <T>(value: () => Promise<T>, message: string) =>
  expect.poll(value, { message, timeout: 15_000 });

async function signIn(page: Page, token: string): Promise<void> {
  await page.locator("#token").fill(token);
  await page.getByRole("button", { name: "Open the console" }).click();
}

describe.skipIf(CHROMIUM_PATH === undefined)("the console page in a browser", () => {
  const suite = daemonSuite();
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("shows nothing without the token or with a wrong one; with it, the mirrors and a failed pass's error; an approved sweep is applied by the next full pass", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 80 } }));
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    await h.sync();
    for (const doc of pickDocs(h, 0, (x) => x.server_instance_id === notion)) h.sim.docs.remove(doc.docId);
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "FAILED", error: FAILURE, times: 1 });
    const full = await h.sync({ full: true });
    const held = full.counts.held_revocations;
    expect(held).toBeGreaterThan(0);
    // The approval and the revocations count the held pairs' access rows; `held` counts their keys.
    const approvedRows = h.query<{ n: number }>(
      "SELECT count(*) AS n FROM resource_access WHERE mirror = 'main' AND server_instance_id = ? AND user_email <> ?",
      notion,
      U1,
    )[0]?.n as number;
    expect(approvedRows).toBeGreaterThan(held);
    const d = await suite.daemon(h);
    // The daemon is ready before its first heartbeat is written: wait for it, so that the page shows it.
    const status = await until(async () => {
      const s = await api<{ mirrors: { live_resources: number }[]; replicas: unknown[] }>(d, "/status");
      return s.replicas.length === 1 && s;
    }, "the daemon's heartbeat");

    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    const dataRequests: Request[] = [];
    page.on("request", (r) => {
      if (/\/(status|v1\/)/.test(r.url())) dataRequests.push(r);
    });
    const blocked: string[] = [];
    page.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) blocked.push(m.text());
    });
    await page.goto(`http://127.0.0.1:${d.port}/`);

    await poll(() => page.locator("#token").isVisible(), "the token prompt").toBe(true);
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect(dataRequests, "no data asked for before the token is given").toEqual([]);

    await signIn(page, "not-the-token");
    await poll(() => page.locator("#login-message").textContent(), "the refusal").toContain(
      "refused this token (401)",
    );
    expect(await page.locator("#token").isVisible(), "the prompt again").toBe(true);
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect(await shownData(page)).toBe("");
    expect(await page.evaluate<number>("sessionStorage.length"), "a refused token is not kept").toBe(0);

    await signIn(page, HTTP_TOKEN);
    const card = page.locator('article.card[data-mirror="main"]');
    await card.waitFor();
    const live = status.mirrors[0]?.live_resources;
    expect(live).toBeGreaterThan(0);
    expect(await page.locator("#replicas").innerText()).toMatch(
      /^Daemons alive: \S+:\d+ \(0 of 2 slots busy\)$/,
    );
    const facts = await card.locator("dl").innerText();
    expect(facts).toMatch(new RegExp(`Live keys\\s+${live}\\b`));
    expect(facts).toMatch(/Last outcome\s+partial/);
    expect(facts).toMatch(/Holder\s+none/);
    expect(facts).toMatch(/Paused\s+no/);
    expect(facts).toMatch(new RegExp(`Problems\\s+failed source: 1, held sweep: ${h.sim.users.length - 1}`));
    expect(facts).toMatch(new RegExp(`Held revocations\\s+${held}\\b`));
    const failedPass = page.locator("article.pass").first();
    expect(await failedPass.innerText()).toContain(`FAILED: ${FAILURE}`);
    expect(await page.locator("#problems").innerText()).toContain(`FAILED: ${FAILURE}`);
    expect(await page.locator("main img, main b").count(), "server text is never markup").toBe(0);
    expect(await page.evaluate<unknown>("window.pwned")).toBeUndefined();
    expect(await page.locator('#problems tr[data-kind="held_sweep"]').count()).toBe(h.sim.users.length - 1);
    await page.screenshot({ path: join(ARTIFACTS, "console.png"), fullPage: true });

    page.once("dialog", (dialog) => void dialog.accept());
    await card.getByRole("button", { name: "Approve held sweep" }).click();
    await poll(() => card.locator(".message").textContent(), "the reply").toContain("approved:");
    expect(await card.locator("dl").innerText()).toMatch(
      new RegExp(`pending: up to ${approvedRows}, by http 127.0.0.1`),
    );
    await card.getByRole("button", { name: "Run full now" }).click();
    const history = await until(async () => {
      const h2 = await api<HistoryJson>(d, "/v1/passes?limit=1");
      return h2.passes[0]?.mode === "full" && h2.passes[0].state === "done" && h2;
    }, "the full pass asked for on the page");
    // The approved pairs' revocations applied; user1's source succeeded this time, and its sweep,
    // as large but never approved, is held now.
    expect(history.passes[0]).toMatchObject({
      counts: { revoked: approvedRows },
      sweep_approval: { up_to: approvedRows, used: approvedRows, by: "http 127.0.0.1" },
    });
    const problems = await api<ProblemsJson>(d, "/v1/problems");
    expect(problems.problems.filter((p) => p.kind === "held_sweep").map((p) => p.user_email)).toEqual([U1]);
    await page.getByRole("button", { name: "Refresh" }).click();
    await poll(
      () => page.locator("article.pass").first().innerText(),
      "the applied sweep on the page",
    ).toContain(
      `Approved sweep (http 127.0.0.1): ${approvedRows} of up to ${approvedRows} revocations applied`,
    );
    const heldRows = page.locator('#problems tr[data-kind="held_sweep"]');
    expect(await heldRows.count()).toBe(1);
    expect(await heldRows.innerText()).toContain(U1);

    expect(blocked, "nothing the page does is blocked by its CSP").toEqual([]);
    expect(dataRequests.length).toBeGreaterThan(0);
    for (const r of dataRequests) {
      const headers = await r.allHeaders();
      expect(headers.authorization, r.url()).toMatch(/^Bearer /);
      expect(headers.cookie, r.url()).toBeUndefined();
    }
    expect(await context.cookies(), "no cookie, ever").toEqual([]);
    expect(await page.evaluate<string | null>('sessionStorage.getItem("syncmirror.httpToken")')).toBe(
      HTTP_TOKEN,
    );
    expect(await page.evaluate<number>("localStorage.length"), "the token is kept for the tab only").toBe(0);
    await page.getByRole("button", { name: "Forget token" }).click();
    expect(await shownData(page)).toBe("");
    expect(await page.evaluate<number>("sessionStorage.length")).toBe(0);
    await page.reload();
    await poll(() => page.locator("#token").isVisible(), "the prompt after forgetting").toBe(true);
    await context.close();
  });

  it("shows a mirror removed from the config as retired, with what to run and no control, until it is forgotten", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 30 } }));
    const [kept, removed] = useMirrors(h, 2) as [string, string];
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    expect((await h.cli(["sync"])).code).toBe(0);
    editConfig(h, (config) => {
      config.mirrors = (config.mirrors as { name: string }[]).filter((m) => m.name === kept);
    });
    const d = await suite.daemon(h);
    const [retired] = (await api<{ retired_mirrors: RetiredMirrorStatus[] }>(d, "/status")).retired_mirrors;
    expect(retired).toMatchObject({ mirror: removed, users: h.sim.users.length });
    expect(retired?.keys).toBeGreaterThan(0);

    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${d.port}/`);
    await signIn(page, HTTP_TOKEN);
    const card = page.locator(`article.card[data-retired="${removed}"]`);
    await card.waitFor();
    expect(await page.locator(`article.card[data-mirror="${kept}"]`).count()).toBe(1);
    expect(await card.innerText()).toContain(
      `It still grants ${retired?.users} user(s) access to ${retired?.keys} key(s), and no pass runs for it.`,
    );
    expect(await card.innerText()).toContain(`Run syncmirror forget --mirror ${removed} to revoke it`);
    expect(await card.locator("button").count(), "forget is the CLI's, under the mirror's lease").toBe(0);

    expect((await h.cli(["forget", "--mirror", removed])).code).toBe(0);
    await page.getByRole("button", { name: "Refresh" }).click();
    await poll(() => card.count(), "the forgotten mirror gone from the page").toBe(0);
    expect(await page.locator(`article.card[data-mirror="${kept}"]`).count()).toBe(1);
    await context.close();
  });

  it("pauses a mirror on a phone: its scheduled ticks are skipped as paused until it is resumed there", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    configureConsumers(h, { search: false });
    const d = await suite.daemon(h);
    await until(() => h.query("SELECT id FROM triggers WHERE state = 'done'").length > 0, "a first pass");

    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${d.port}/`);
    await signIn(page, HTTP_TOKEN);
    const card = page.locator('article.card[data-mirror="main"]');
    await card.getByRole("button", { name: "Pause" }).click();
    await poll(() => card.locator(".message").textContent(), "the reply").toContain("paused main");
    expect(await card.locator("dl").innerText()).toMatch(/Paused\s+since .* by http 127\.0\.0\.1/);

    const skipped = () => d.metric("syncmirror_ticks_skipped_total", { reason: "paused" });
    const first = await until(skipped, "a tick skipped as paused");
    // A pass taken just before the pause landed may still have started; none after a skipped tick.
    const passes = triggerCount(h);
    await until(async () => (await skipped()) >= first + 2, "two more ticks skipped");
    expect(triggerCount(h), "no pass started while paused").toBe(passes);
    expect(await d.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(1);
    expect(
      await page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth"),
      "nothing wider than the phone's screen",
    ).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "console-phone.png"), fullPage: true });

    await card.getByRole("button", { name: "Resume" }).click();
    await until(() => triggerCount(h) > passes, "a pass at a tick after resume");
    expect(await d.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(0);
    expect(h.query("SELECT action, actor FROM control_actions ORDER BY id")).toEqual([
      { action: "pause", actor: "http 127.0.0.1" },
      { action: "resume", actor: "http 127.0.0.1" },
    ]);
    await context.close();
  });
});
