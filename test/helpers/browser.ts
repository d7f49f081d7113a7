/**
 * Debian's chromium driven by playwright-core (its own browser download is blocked here): where it
 * is (vitest.config.ts sets SYNCMIRROR_CHROMIUM to it, or to "" when there is none and the browser
 * tests skip), and a launch that keeps it off the network.
 */
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

/** The browser's path, or undefined when the browser tests are skipped. */
export const CHROMIUM_PATH = process.env.SYNCMIRROR_CHROMIUM || undefined;

/**
 * Left to itself chromium reaches for the network at start (component updates, sync, QUIC probes,
 * field trials): on a closed network those only add noise and delay. The profile is a fresh
 * temporary directory (playwright's `launch` makes one and removes it on close).
 */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launchChromium(): Promise<Browser> {
  if (CHROMIUM_PATH === undefined)
    throw new Error("no chromium: see SYNCMIRROR_CHROMIUM in vitest.config.ts");
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ARGS });
}

/** One browser for a test file: launched before its tests, closed after them. */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (browser === undefined) throw new Error("the browser is launched before the tests");
    return browser;
  };
}
