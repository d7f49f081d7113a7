/**
 * An error a pass met, in the JSON shape the history (`syncmirror history --json`, GET /v1/passes)
 * and `sync --json` both print: one shape, so a script reads the same errors from either.
 */
import type { PassError } from "../store/console-types.js";

export interface PassErrorJson {
  at: string;
  /** Null for the failure of a whole attempt (the trigger refused, the token rejected...). */
  sync_id: string | null;
  user_email: string | null;
  /** The source label, for a source that did not succeed. */
  source: string | null;
  /** The service's own text where it gave one. */
  error: string;
  /** `hostname:pid` of the process that met it. */
  replica: string | null;
}

/** An error a pass met, as the history lists it and `sync --json` prints it. */
export function passErrorJson(e: PassError): PassErrorJson {
  return {
    at: e.at,
    sync_id: e.syncId,
    user_email: e.userEmail,
    source: e.source,
    error: e.error,
    replica: e.replica,
  };
}
