/**
 * Bearer-token check for the HTTP endpoints that name users (docs/reference/http.md).
 */
import { createHash, timingSafeEqual } from "node:crypto";

/**
 * True when `authorization` is `Bearer <expectedToken>`. Both sides are hashed first, so the
 * comparison takes the same time whatever the length or content of the presented token; false
 * whenever no token is configured.
 */
export function isBearerAuthorized(
  authorization: string | undefined,
  expectedToken: string | undefined,
): boolean {
  if (expectedToken === undefined || expectedToken === "" || authorization === undefined) return false;
  const match = /^Bearer +(.+)$/i.exec(authorization.trim());
  const presented = match?.[1] ?? "";
  return timingSafeEqual(digest(presented), digest(expectedToken));
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
