/**
 * Tokens never sit in the config file: finding them (by key name, or by value: the API or HTTP
 * token of the environment) before the file is validated. Messages name the key, never the value.
 */
import type { ConfigIssue } from "./errors.js";

export const DEFAULT_TOKEN_ENV = "SYNCMIRROR_API_TOKEN";
export const DEFAULT_HTTP_TOKEN_ENV = "SYNCMIRROR_HTTP_TOKEN";

type Env = Readonly<Record<string, string | undefined>>;

const SECRET_KEY = /(^|_)(token|secret|password|api_?key|bearer)$/i;
/** A connection URL carries its password: it belongs in the environment, like the token. */
const DATABASE_URL = /^postgres(ql)?:\/\//i;

/**
 * A token must never sit in the file: a key named like a secret (other than `token_env`) holding a
 * string, or any value holding the API or HTTP token of the environment. Messages name the key,
 * never the value.
 */
export function findSecrets(raw: unknown, env: Env): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const tokenEnv = readTokenEnv(raw, "api", DEFAULT_TOKEN_ENV);
  const envTokens = [env[tokenEnv], env[readTokenEnv(raw, "http", DEFAULT_HTTP_TOKEN_ENV)]].filter(
    (t): t is string => t !== undefined && t.length >= 8,
  );
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, [...path, i]);
    } else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    } else if (typeof value === "string") {
      const key = String(path.at(-1) ?? "");
      const namedSecret = SECRET_KEY.test(key) && key !== "token_env";
      const isEnvToken = envTokens.some((t) => value.includes(t));
      if (DATABASE_URL.test(value.trim())) {
        issues.push({
          path: formatPath(path),
          message:
            "holds a database URL, which carries a password: put it in an environment variable and name that variable in database.url_env",
        });
      } else if (namedSecret || isEnvToken) {
        issues.push({
          path: formatPath(path),
          message: `holds a token; tokens are read only from the environment variable named by api.token_env (${tokenEnv}): remove it from the file`,
        });
      }
    }
  };
  walk(raw, []);
  return issues;
}

function readTokenEnv(raw: unknown, section: "api" | "http", fallback: string): string {
  const value = (raw as Record<string, { token_env?: unknown } | undefined> | null)?.[section]?.token_env;
  return typeof value === "string" ? value : fallback;
}

/** `api.base_url`, `mirrors[0].name`: a zod issue path as the config file's keys read. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`))
    .join("");
}
