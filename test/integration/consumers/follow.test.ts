/**
 * `syncmirror changes --follow` against its reader and its stop (either dialect): a reader that
 * takes nothing holds the feed where it is (the command reads the next page only once the reader
 * has taken the last one, instead of buffering the whole feed in memory), and SIGINT stops it
 * between two pages, or while it waits for a change, with exit 0. Pages read are counted through
 * the crash seam at each printed page (`feed-page`) and the lines the reader gets.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, until } from "../../helpers/daemon.js";
import { lastSeq } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

/**
 * 200 documents of about 6 KB: their changes fill 8 pages of 50 or more, each of about 300 KB, more
 * than a pipe (64 KB) and the reader's stream buffer hold together.
 */
const DOCS = 200;
const LIMIT = 50;

let h: Harness | undefined;
let follow: CliProcess | undefined;

beforeAll(buildOnce);
afterEach(async () => {
  follow?.child.stdout?.resume();
  await follow?.stop("SIGKILL");
  follow = undefined;
  await h?.close();
  h = undefined;
});

async function mirrored(docs: number): Promise<Harness> {
  h = await createHarness({ sim: { docs } });
  await h.sync();
  return h;
}

function followFrom(h: Harness, env: Record<string, string> = {}, limit = LIMIT): CliProcess {
  follow = spawnCli(
    ["changes", "--after", "0", "--limit", String(limit), "--follow", "--config", h.configPath],
    { ...h.env, ...env },
  );
  return follow;
}

/** The pages the reader got, each checked to follow the one before. */
function pagesPrinted(p: CliProcess): { changes: { seq: number }[]; next_after: number }[] {
  const pages = p
    .stdout()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { changes: { seq: number }[]; next_after: number });
  let after = 0;
  for (const page of pages) {
    expect(page.changes[0]?.seq).toBeGreaterThan(after);
    after = page.next_after;
  }
  return pages;
}

describe("changes --follow and its reader", () => {
  it("reads no further while its reader takes nothing, and exits 0 on SIGINT then", async () => {
    const h = await mirrored(DOCS);
    expect(lastSeq(h)).toBeGreaterThanOrEqual(DOCS);
    // Killed outright at a 3rd page: the first one's write already has to wait for the reader.
    const p = followFrom(h, { LOG_LEVEL: "debug", SYNCMIRROR_CRASH_AT: "feed-page:3" });
    p.child.stdout?.pause();
    await until(
      () => p.stderr().includes("waiting for the reader") || p.child.exitCode !== null || p.child.signalCode,
      "the command waiting for its reader, or its end",
    );
    expect(p.child.signalCode, "it read a 3rd page its reader had not asked for").toBeNull();
    expect(p.child.exitCode).toBeNull();

    // Stopped with its last page still unread: the reader gets what it took, the rest is dropped
    // once the CLI's grace for output ends, and the exit says it stopped cleanly.
    p.child.kill("SIGINT");
    await until(() => p.child.exitCode !== null || p.child.signalCode, "the exit");
    expect({ code: p.child.exitCode, signal: p.child.signalCode }, p.stderr()).toEqual({
      code: 0,
      signal: null,
    });
  });

  it("stops between two pages on SIGINT while it catches up, and exits 0", async () => {
    const h = await mirrored(DOCS);
    const pagesToRead = Math.ceil(lastSeq(h) / 10);
    // The stop is sent right after the first page is printed, with more than 30 pages of 10 to read;
    // the process hears it a page later (measured: 2 pages printed on either store).
    const p = followFrom(h, { SYNCMIRROR_CRASH_AT: "feed-page:1:SIGINT" }, 10);
    const exit = await p.exited;
    expect(exit, p.stderr()).toEqual({ code: 0, signal: null });
    const pages = pagesPrinted(p);
    expect(pages.length).toBeGreaterThanOrEqual(1);
    expect(pagesToRead).toBeGreaterThan(30);
    expect(pages.length, `of ${pagesToRead} pages`).toBeLessThanOrEqual(3);
  });

  it("exits 0 on SIGINT while it waits for the next change", async () => {
    const h = await mirrored(10);
    const p = followFrom(h, {}, 1000);
    await until(() => p.stdout().includes("\n"), "the first page");
    expect(pagesPrinted(p)).toHaveLength(1);
    expect((await p.stop("SIGINT")).code, p.stderr()).toBe(0);
  });
});
