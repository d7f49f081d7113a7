/**
 * Every endpoint's and command's `limit` (docs/reference/http.md): 1 or more, and above what a page
 * holds it is that most, not a refusal, as is the feed's `wait` above 60 seconds; the feed's
 * `after` not given reads from the start.
 */
import { describe, expect, it } from "vitest";
import { parseHistoryParams, parseProblemParams } from "../../src/console/params.js";
import { parseFeedParams, parseSearchParams } from "../../src/consumers/params.js";
import { UsageError } from "../../src/errors.js";

const feed = (raw: Record<string, string>) => parseFeedParams(raw, [], async () => false);
const search = (limit: string) => parseSearchParams({ user: "a@example.com", q: "x", limit }, []).limit;

describe("page limits", async () => {
  it("serve a limit above a page's most as that most, however many digits it has", async () => {
    expect((await feed({ after: "0", limit: "5000" })).limit).toBe(1000);
    expect((await feed({ after: "0", limit: "99999999999999999999" })).limit).toBe(1000);
    expect(search("101")).toBe(100);
    expect(parseHistoryParams({ limit: "1000" }, []).limit).toBe(500);
    expect(parseProblemParams({ limit: "20000" }, []).limit).toBe(10_000);
  });

  it("serve a long poll's wait above 60 seconds as 60, and refuse a negative one", async () => {
    expect((await feed({ wait: "3600" })).wait).toBe(60);
    expect((await feed({ wait: "60.5" })).wait).toBe(60);
    expect((await feed({ wait: "0.5" })).wait).toBe(0.5);
    await expect(feed({ wait: "-1" })).rejects.toThrow(new UsageError("wait: must be 0 or more"));
  });

  it("keep a limit within range as given, and the defaults", async () => {
    expect(await feed({ after: "3", limit: "7" })).toMatchObject({ after: 3, limit: 7 });
    expect(await feed({})).toMatchObject({ after: 0, limit: 100 });
    expect(search("100")).toBe(100);
    expect(parseHistoryParams({}, []).limit).toBe(20);
    expect(parseProblemParams({}, []).limit).toBe(1000);
  });

  it("still refuse a limit below 1 or not a whole number", async () => {
    await expect(feed({ limit: "0" })).rejects.toThrow(new UsageError("limit: must be at least 1"));
    expect(() => parseHistoryParams({ limit: "-99999999999999999999" }, [])).toThrow(
      new UsageError("limit: must be at least 1"),
    );
    expect(() => search("ten")).toThrow(new UsageError("limit: must be a whole number written in digits"));
  });
});
