/**
 * The search syntax SQLite's FTS5 accepts (words, "phrases", prefix*, AND / OR / NOT, parentheses,
 * `title:` / `content_text:` before a word or phrase) turned into a PostgreSQL `tsquery` text, so a
 * query means the same on both dialects and a bad one fails the same way: here, before any SQL, as
 * SearchQueryError. Lexemes are quoted, so nothing a user types reaches `to_tsquery` as an
 * operator. Accents are removed as the index removes them.
 *
 * FTS5 splits `user@example.com` into three words; PostgreSQL's parser keeps an email, a host or a
 * path whole in the index. So a phrase term that joins words with punctuation matches either form:
 * `('user' <-> 'example' <-> 'com' | 'user@example.com')`.
 */
import { SearchQueryError } from "../../errors.js";
import { SEARCH_QUERY_ADVICE } from "../consumer-types.js";

const WORD = /[\p{L}\p{N}\p{M}_]+/gu;
const TOKEN = /\s*(?:("(?:[^"]|"")*")|([\p{L}\p{N}\p{M}_]+)|([()*:])|(\S))/uy;
/**
 * FTS5's column filters (`title:word`) as tsquery weights: the index weighs title A, text B. FTS5
 * reads a column's name in any case (`TITLE:word`), so the lookup folds it too.
 */
const COLUMN_WEIGHTS = new Map([
  ["title", "A"],
  ["content_text", "B"],
]);

/** One whitespace-separated term of a phrase; `whole` when punctuation joins several words. */
interface Term {
  words: string[];
  whole?: string;
}

type Token = { kind: "phrase"; terms: Term[] } | { kind: "op"; op: string } | { kind: "punct"; text: string };

/** Combining diacritics, removed after NFD as the index removes them (see search.ts). */
export const DIACRITICS = "[\u0300-\u036f]";
const DIACRITIC = new RegExp(DIACRITICS, "g");

export function foldAccents(word: string): string {
  return word.normalize("NFD").replace(DIACRITIC, "").normalize("NFC");
}

export function toTsquery(query: string): string {
  const parser = new Parser(tokenize(query));
  const tree = parser.or();
  if (!parser.done()) fail();
  return tree;
}

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < query.length) {
    const m = TOKEN.exec(query);
    if (m === null) break;
    const [, quoted, bare, punct, other] = m;
    if (other !== undefined) fail();
    if (quoted !== undefined) tokens.push({ kind: "phrase", terms: phraseTerms(quoted) });
    else if (bare === "AND" || bare === "OR" || bare === "NOT") tokens.push({ kind: "op", op: bare });
    else if (bare !== undefined) tokens.push({ kind: "phrase", terms: [{ words: [bare] }] });
    else if (punct !== undefined) tokens.push({ kind: "punct", text: punct });
  }
  return tokens;
}

function phraseTerms(quoted: string): Term[] {
  return quoted
    .slice(1, -1)
    .replace(/""/g, '"')
    .split(/\s+/)
    .map((text): Term => {
      const words = text.match(WORD) ?? [];
      const whole = text.replace(EDGE_PUNCTUATION, "");
      return words.length > 1 ? { words, whole } : { words };
    })
    .filter((term) => term.words.length > 0);
}

const EDGE_PUNCTUATION = /^[^\p{L}\p{N}\p{M}_]+|[^\p{L}\p{N}\p{M}_]+$/gu;

/** A tsquery lexeme in quotes: `'` doubled and `\` escaped, so the text stays one operand. */
function quoteLexeme(text: string): string {
  return `'${foldAccents(text.toLowerCase()).replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

class Parser {
  private at = 0;
  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.at === this.tokens.length;
  }

  or(): string {
    const parts = [this.and()];
    while (this.takeOp("OR")) parts.push(this.and());
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" | ")})`;
  }

  private and(): string {
    const parts = [this.not()];
    for (;;) {
      if (this.takeOp("AND")) parts.push(this.not());
      else if (this.startsPrimary()) parts.push(this.not());
      else break;
    }
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" & ")})`;
  }

  private not(): string {
    let left = this.primary();
    while (this.takeOp("NOT")) left = `(${left} & !${this.primary()})`;
    return left;
  }

  private primary(): string {
    const weight = this.columnFilter();
    const token = this.tokens[this.at++];
    if (token?.kind === "punct" && token.text === "(" && weight === "") {
      const inner = this.or();
      const close = this.tokens[this.at++];
      if (close?.kind !== "punct" || close.text !== ")") fail();
      return inner;
    }
    if (token?.kind !== "phrase" || token.terms.length === 0) fail();
    const next = this.tokens[this.at];
    const prefix = next?.kind === "punct" && next.text === "*";
    if (prefix) this.at++;
    const lexeme = (text: string, star: string) =>
      star || weight ? `${quoteLexeme(text)}:${star}${weight}` : quoteLexeme(text);
    const last = token.terms.length - 1;
    const parts = token.terms.map((term, t) => {
      const words = term.words.map((w, i) =>
        lexeme(w, prefix && t === last && i === term.words.length - 1 ? "*" : ""),
      );
      const phrase = words.length === 1 ? (words[0] as string) : `(${words.join(" <-> ")})`;
      return term.whole === undefined ? phrase : `(${phrase} | ${lexeme(term.whole, "")})`;
    });
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" <-> ")})`;
  }

  /** The weight of a `title:` / `content_text:` prefix, consumed; "" without one. */
  private columnFilter(): string {
    const [name, colon] = [this.tokens[this.at], this.tokens[this.at + 1]];
    if (colon?.kind !== "punct" || colon.text !== ":") return "";
    const only = name?.kind === "phrase" && name.terms.length === 1 ? name.terms[0] : undefined;
    const weight =
      only?.words.length === 1 ? COLUMN_WEIGHTS.get((only.words[0] as string).toLowerCase()) : undefined;
    if (weight === undefined) fail();
    this.at += 2;
    return weight;
  }

  private startsPrimary(): boolean {
    const t = this.tokens[this.at];
    return t?.kind === "phrase" || (t?.kind === "punct" && t.text === "(");
  }

  private takeOp(op: string): boolean {
    const t = this.tokens[this.at];
    if (t?.kind !== "op" || t.op !== op) return false;
    this.at++;
    return true;
  }
}

function fail(): never {
  throw new SearchQueryError(SEARCH_QUERY_ADVICE);
}
