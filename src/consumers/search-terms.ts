/**
 * What people type into a search box is often not search syntax: `don't`, `C++`,
 * `user@example.com`, `foo-bar`, `a/b`. A query the index refuses is searched again with each term
 * that holds punctuation quoted as a phrase (the index splits it into its words the way it split
 * the documents); terms with no letter or digit at all are left out. Queries the index accepts are
 * never rewritten, so its operators keep their meaning.
 */

/** A term that already is search syntax: an operator, a word, `prefix*`, `title:` / `content_text:` before one. */
const PLAIN_TERM = /^(?:(?:title|content_text):)?(?:[\p{L}\p{N}\p{M}_]+\*?)?$/u;
const WORD_CHAR = /[\p{L}\p{N}\p{M}_]/u;
const SEPARATOR = /[\s()]/u;

const nothingToSearchFor = (query: string) =>
  `${JSON.stringify(query)} holds no letter or digit to search for`;

export type Requoted = { ok: true; query: string } | { ok: false; problem: string };

/** `query` with its punctuated terms quoted, or why no such rewriting can make it a query. */
export function quotePunctuatedTerms(query: string): Requoted {
  let out = "";
  let i = 0;
  while (i < query.length) {
    const c = query[i] as string;
    if (c === '"') {
      const end = closingQuote(query, i);
      if (end < 0)
        return {
          ok: false,
          problem: 'a double quote (") is not closed: close the phrase, or leave the quote out',
        };
      out += query.slice(i, end + 1);
      i = end + 1;
    } else if (SEPARATOR.test(c)) {
      out += c;
      i++;
    } else {
      let j = i;
      while (j < query.length && !SEPARATOR.test(query[j] as string) && query[j] !== '"') j++;
      const term = query.slice(i, j);
      if (PLAIN_TERM.test(term)) out += term;
      else if (WORD_CHAR.test(term)) out += `"${term}"`;
      i = j;
    }
  }
  if (!WORD_CHAR.test(out)) return { ok: false, problem: nothingToSearchFor(query) };
  return { ok: true, query: out };
}

/** The index of the quote closing the phrase opened at `start` (`""` inside is an escaped quote), or -1. */
function closingQuote(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] !== '"') continue;
    if (text[i + 1] === '"') i++;
    else return i;
  }
  return -1;
}

/** The most words a query may hold, each repeat counted: every one costs the index and the snippet. */
export const MAX_QUERY_WORDS = 32;
const WORD = /[\p{L}\p{N}\p{M}_]+/gu;
/** A prefix of one letter matches nearly every word of the index (its prefix index starts at 2). */
const ONE_LETTER_PREFIX = /(?<![\p{L}\p{N}\p{M}_])[\p{L}\p{N}\p{M}_]\*/u;

/**
 * Why a query with nothing to search for is not a valid search query, or undefined: one index
 * answered such a query with nothing, the other refused it.
 */
export function emptyQueryProblem(query: string): string | undefined {
  return WORD_CHAR.test(query) ? undefined : `the search query is not valid: ${nothingToSearchFor(query)}`;
}

/**
 * Why the query is refused before it reaches the index, or undefined: it would cost the
 * database too much. Hundreds of words, or a few one-letter prefixes, took seconds to minutes to
 * answer, and on SQLite held every other request of the daemon meanwhile.
 */
export function refusedQueryProblem(query: string): string | undefined {
  if ((query.match(WORD)?.length ?? 0) > MAX_QUERY_WORDS)
    return `must hold at most ${MAX_QUERY_WORDS} words (each repeat counts): search for fewer`;
  if (ONE_LETTER_PREFIX.test(query))
    return "a prefix (word*) needs at least 2 letters before the *: write more of the word";
  return undefined;
}
