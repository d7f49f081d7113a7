/**
 * What people type into a search box: punctuated terms are searched as phrases (on SQLite's FTS5 and,
 * through the same rewriting, on PostgreSQL), and PostgreSQL also matches the whole term, since its
 * parser keeps an email or a host as one word where FTS5 splits it.
 */
import { describe, expect, it } from "vitest";
import { parseSearchParams } from "../../src/consumers/params.js";
import { quotePunctuatedTerms } from "../../src/consumers/search-terms.js";
import { SearchQueryError, UsageError } from "../../src/errors.js";
import { toTsquery } from "../../src/store/postgres/search-query.js";

describe("quotePunctuatedTerms", () => {
  it.each([
    ["don't", `"don't"`],
    ["C++ compiler", `"C++" compiler`],
    ["mail user@example.com now", `mail "user@example.com" now`],
    ["title:release (foo-bar OR baz*)", `title:release ("foo-bar" OR baz*)`],
    ['"a phrase" a.b', `"a phrase" "a.b"`],
    ["fix & ship", "fix  ship"],
  ])("%s -> %s", (query, expected) => {
    expect(quotePunctuatedTerms(query)).toEqual({ ok: true, query: expected });
  });

  it("names what no rewriting can fix: an unclosed quote, nothing but punctuation", () => {
    expect(quotePunctuatedTerms('"unclosed')).toEqual({
      ok: false,
      problem: 'a double quote (") is not closed: close the phrase, or leave the quote out',
    });
    expect(quotePunctuatedTerms("+++ &")).toEqual({
      ok: false,
      problem: '"+++ &" holds no letter or digit to search for',
    });
  });
});

describe("toTsquery (PostgreSQL)", () => {
  it("matches a punctuated phrase term as its words or whole, quoting what the user typed", () => {
    expect(toTsquery('"user@example.com"')).toBe("(('user' <-> 'example' <-> 'com') | 'user@example.com')");
    expect(toTsquery(`"don't"`)).toBe("(('don' <-> 't') | 'don''t')");
    expect(toTsquery('"C++"')).toBe("'c'");
    expect(toTsquery('title:"v1.2 notes"*')).toBe("((('v1':A <-> '2':A) | 'v1.2':A) <-> 'notes':*A)");
  });
});

describe("what a search query may ask for", () => {
  const q = (query: string) => parseSearchParams({ user: "a@example.com", q: query }, []).q;

  // Each word costs the index a pass over its matches and the snippet a scan per result: a query
  // of hundreds of words (or one-letter prefixes, which match nearly every word) held the daemon
  // for seconds to minutes, on SQLite every request with it.
  it("refuses more than 32 words, counting each repeat, and takes 32", () => {
    expect(q("team ".repeat(32).trim())).toBe("team ".repeat(32).trim());
    expect(() => q("team ".repeat(33))).toThrow(UsageError);
    expect(() => q("team ".repeat(33))).toThrow(/q: .*at most 32 words/);
    expect(() => q(`"${"a b ".repeat(17)}"`)).toThrow(/at most 32 words/);
  });

  // SQLite's index took `""` and an emoji as queries that find nothing; PostgreSQL's refused them.
  it("refuses a query with no letter or digit in it, on every store alike, as an invalid query", () => {
    for (const query of ['""', "😀", '"" ""', "!!!"]) {
      expect(() => q(query), query).toThrow(SearchQueryError);
      // Exactly: the parameter is named once, by whoever reports it (HTTP `q:`).
      const message = `the search query is not valid: ${JSON.stringify(query)} holds no letter or digit to search for`;
      expect(() => q(query), query).toThrow(
        new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`),
      );
    }
  });

  it("refuses a prefix of one letter, and takes two", () => {
    expect(() => q("roadmap a*")).toThrow(/q: .*at least 2 letters/);
    expect(() => q("title:x*")).toThrow(/at least 2 letters/);
    expect(q("roadmap ro*")).toBe("roadmap ro*");
    expect(q("C++ a.b")).toBe("C++ a.b");
  });
});
