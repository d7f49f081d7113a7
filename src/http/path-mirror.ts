/**
 * The `{name}` of `/v1/mirrors/{name}/...` (docs/reference/http.md): decoded, and checked against
 * the configured mirrors. A segment that is not valid percent-encoding names no mirror either: it
 * gets the same 404, not a 500 (decodeURIComponent throws on it).
 */
import { unknownMirrorMessage } from "../errors.js";
import { errorReply, type Reply } from "../http-server.js";

/** The mirror the path names, or the 404 that says which mirrors there are. */
export function mirrorOfPath(segment: string, mirrors: readonly string[]): string | Reply {
  let name: string | undefined;
  try {
    name = decodeURIComponent(segment);
  } catch {
    name = undefined;
  }
  if (name !== undefined && mirrors.includes(name)) return name;
  return errorReply(404, "NOT_FOUND", unknownMirrorMessage(name ?? segment, mirrors));
}
