/**
 * Tokens never sit in the config file: finding them (by key name, or by value: the API or HTTP
 * token of the environment) before the file is validated. Messages name the key, never the value.
 */
import type { ConfigIssue } from "./errors.js";

export const DEFAULT_TOKEN_ENV = "SYNCMIRROR_API_TOKEN";
export const DEFAULT_HTTP_TOKEN_ENV = "SYNCMIRROR_HTTP_TOKEN";

type Env = Readonly<Record<string, string | undefined>>;

/**
 * A token as its variable holds it, less surrounding whitespace: a secret mounted from a file, or
 * written with `echo`, ends in a newline that is no part of the token and that no HTTP header may
 * carry (undici refuses the whole request).
 */
export function tokenFromEnv(value: string | undefined): string | undefined {
  return value?.trim();
}

/**
 * Why a trimmed token cannot be sent as `Authorization: Bearer <token>` (a line break or other
 * control character inside it), or undefined when it can. Never names the value.
 */
export function unsendableToken(token: string): string | undefined {
  return /[^\x20-\x7e\x80-\xff]/.test(token)
    ? "holds a line break or another control character inside the token, which no HTTP header can carry: export the token alone in it"
    : undefined;
}

const SECRET_KEY = /(^|_)(token|secret|password|api_?key|bearer)$/i;
/**
 * A connection URL carries its password: it belongs in the environment, like the token, wherever
 * in a value it sits (a message or instructions quoting it are sent upstream).
 */
const DATABASE_URL = /postgres(ql)?:\/\//i;
/** Any URL with a password in it (`https://user:secret@host`): the password is a secret too. */
const URL_WITH_PASSWORD = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]+@/i;

/** The two tokens: which `*.token_env` names the variable, and the variable it defaults to. */
const TOKENS = { api: DEFAULT_TOKEN_ENV, http: DEFAULT_HTTP_TOKEN_ENV } as const;
type TokenKind = keyof typeof TOKENS;

/** `token_env`, `url_env`: keys whose value names an environment variable. */
const NAMES_A_VARIABLE = /_env$/;

/**
 * A random token written where a variable's name belongs, long: upper and lower case and digits
 * mixed, or letters and many digits with no underscore (a hex token). Conventional variable names
 * (SYNCMIRROR_API_TOKEN, my_token_1) are neither; the message about an unset variable would
 * otherwise print the token as the variable's name.
 */
function looksLikeToken(value: string): boolean {
  if (value.length < 16 || !/\d/.test(value)) return false;
  const mixedCase = /[a-z]/.test(value) && /[A-Z]/.test(value);
  const hexLike = !value.includes("_") && (value.match(/\d/g) ?? []).length >= 4;
  return mixedCase || hexLike;
}

/**
 * A token must never sit in the file: a key named like a secret (other than `token_env`) holding a
 * string, or any value holding the API or HTTP token of the environment (as the configured
 * variables or their defaults hold them), or a `*_env` key holding something shaped like a token
 * instead of a variable's name, or a key that is itself one of these. Messages name the key, never
 * the value.
 */
export function findSecrets(raw: unknown, env: Env): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const envTokens: [TokenKind, string][] = [];
  for (const kind of ["api", "http"] as const) {
    for (const name of new Set([readTokenEnv(raw, kind), TOKENS[kind]])) {
      const token = tokenFromEnv(env[name]);
      if (token !== undefined && token.length >= 8) envTokens.push([kind, token]);
    }
  }
  const tokenIn = (text: string) => envTokens.find(([, t]) => text.includes(t))?.[0];
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, [...path, i]);
    } else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        // A secret written as a key (`database: {postgres://...}`) would be printed as part of
        // every key path below it: it is named by the mapping that holds it, and not walked into.
        // Every key of the file is snake_case, so one shaped like a token is no key at all.
        const kind = tokenIn(k) ?? (looksLikeToken(k) ? (path[0] === "http" ? "http" : "api") : undefined);
        const problem = urlProblem(k) ?? (kind && tokenProblem(kind));
        if (problem) issues.push({ path: formatPath(path), message: `has a key that ${problem}` });
        else walk(v, [...path, k]);
      }
    } else if (typeof value === "string") {
      const key = String(path.at(-1) ?? "");
      const namesVariable = NAMES_A_VARIABLE.test(key);
      const envToken = tokenIn(value);
      const kind: TokenKind = envToken ?? (path[0] === "http" ? "http" : "api");
      const url = urlProblem(value);
      if (url) {
        issues.push({ path: formatPath(path), message: url });
      } else if (namesVariable && (envToken !== undefined || looksLikeToken(value))) {
        issues.push({
          path: formatPath(path),
          message: `holds a token instead of the name of the environment variable that holds it: export the token in a variable (by default ${TOKENS[kind]}) and name that variable here`,
        });
      } else if (path[0] === "database" && SECRET_KEY.test(key) && !namesVariable && envToken === undefined) {
        // The database's password is no API token: its place is the URL in the environment.
        issues.push({
          path: formatPath(path),
          message:
            "holds a password: put it in the postgres:// URL of the environment variable that database.url_env names, and remove it from the file",
        });
      } else if ((SECRET_KEY.test(key) && !namesVariable) || envToken !== undefined) {
        issues.push({
          path: formatPath(path),
          message: tokenProblem(kind),
        });
      }
    }
  };
  walk(raw, []);
  return issues;
}

function tokenProblem(kind: TokenKind): string {
  return `holds a token; tokens are read only from the environment variable named by ${kind}.token_env (by default ${TOKENS[kind]}): remove it from the file`;
}

/** Why a value holding a database URL, or any URL with a password, may not sit in the file. */
function urlProblem(text: string): string | undefined {
  if (DATABASE_URL.test(text))
    return "holds a database URL, which carries a password: put it in an environment variable and name that variable in database.url_env";
  if (URL_WITH_PASSWORD.test(text))
    return `holds a URL with a password in it: remove the user name and password from the URL (the service's token is read only from the environment variable named by api.token_env, by default ${DEFAULT_TOKEN_ENV})`;
  return undefined;
}

/** The variable `<section>.token_env` names in the raw file, else its default. */
function readTokenEnv(raw: unknown, section: TokenKind): string {
  const value = (raw as Record<string, { token_env?: unknown } | undefined> | null)?.[section]?.token_env;
  return typeof value === "string" ? value : TOKENS[section];
}

/** `api.base_url`, `mirrors[0].name`: a zod issue path as the config file's keys read. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`))
    .join("");
}
