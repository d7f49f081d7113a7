/**
 * The placeholders `syncmirror init` writes when it has no service to ask, and how a config still
 * holding one is refused: every command (`check` first) names each such key and what belongs there,
 * rather than reaching for a host that does not exist.
 */
import { formatPath } from "./config-secrets.js";
import type { ConfigIssue } from "./errors.js";

/** Every placeholder holds this; nothing real does. */
const MARK = "REPLACE-WITH-";

export const PLACEHOLDERS = Object.freeze({
  baseUrl: `https://${MARK}YOUR-SERVICE-HOST/api/v1`,
  syncConfigId: `${MARK}YOUR-SYNC-CONFIG-ID`,
});

const ADVICE: readonly (readonly [RegExp, string])[] = [
  [
    /^api\.base_url$/,
    "put the service's API base URL there, with its /api/v1 prefix (e.g. https://api.example.com/api/v1)",
  ],
  [
    /^mirrors\[\d+\]\.sync_config_id$/,
    "put the id of the sync config to mirror there (GET <base_url>/sync-configs?project_id=<id from GET /projects> lists them)",
  ],
];

/** One issue per value that still holds a placeholder of `syncmirror init`. */
export function findPlaceholders(raw: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (Array.isArray(value)) for (const [i, v] of value.entries()) walk(v, [...path, i]);
    else if (value !== null && typeof value === "object")
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    else if (typeof value === "string" && value.includes(MARK)) {
      const key = formatPath(path);
      const advice = ADVICE.find(([pattern]) => pattern.test(key))?.[1] ?? "replace it with a real value";
      issues.push({
        path: key,
        message: `still holds a REPLACE-WITH placeholder (as syncmirror init and the shipped deploy config write them): ${advice}`,
      });
    }
  };
  walk(raw, []);
  return issues;
}
