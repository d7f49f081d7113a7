/**
 * A fingerprint of a declaration as the file writes it, so the daemon can tell without a request
 * whether a mirror's declaration changed since it was last applied. Order and case that the
 * service ignores (servers, user emails) do not change it.
 */
import { createHash } from "node:crypto";
import type { DeclaredSyncConfig } from "../config-sync-config.js";

export function declarationHash(d: DeclaredSyncConfig): string {
  const canonical = JSON.stringify([
    d.project,
    d.name,
    d.instructions,
    [...d.servers].sort(),
    d.allUsers,
    d.users ? d.users.map((u) => u.toLowerCase()).sort() : null,
  ]);
  return `sha256:${createHash("sha256").update(canonical).digest("hex")}`;
}
