/**
 * What people type into a search box: punctuated terms are searched as phrases (on SQLite's FTS5 and,
 * through the same rewriting, on PostgreSQL), and PostgreSQL also matches the whole term, since its
 * parser keeps an email or a host as one word where FTS5 splits it.
 */
import { describe, expect, it } from "vitest";
import { quotePunctuatedTerms } from "../../src/consumers/search-terms.js";
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
