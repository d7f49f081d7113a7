import { createHash } from "node:crypto";

/** JSON with object keys sorted at every depth: equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, sortKeys);
}

function sortKeys(_key: string, value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = (value as Record<string, unknown>)[key];
  return sorted;
}

/** `sha256:<hex>` of the canonical JSON of `value`. */
export function sha256Of(value: unknown): string {
  return `sha256:${createHash("sha256").update(canonicalJson(value)).digest("hex")}`;
}
