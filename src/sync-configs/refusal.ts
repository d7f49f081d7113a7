/**
 * Why the service refused a declaration, said in the file's terms: a 400 naming a user or a server
 * becomes the key of that user or server (`mirrors[0].sync_config.users[1]`), with what to do.
 */
import { describeDetail } from "../api/status-errors.js";
import { declaredKey } from "../config-sync-config.js";
import { BadRequestError, NameTakenError, NotFoundError, SyncmirrorError } from "../errors.js";
import type { DesiredSyncConfig } from "./resolve.js";

export function describeRefusal(error: unknown, want: DesiredSyncConfig): string {
  const d = want.mirror.declared;
  if (!(error instanceof SyncmirrorError)) return String(error);
  if (error instanceof NameTakenError) return `${declaredKey(d, "name")}: ${error.message}`;
  if (error instanceof NotFoundError && error.method === "PUT")
    return `the sync config is gone upstream (404): run apply again to create it`;
  if (!(error instanceof BadRequestError)) return error.message;
  const detail = describeDetail(error.detail);
  const text = JSON.stringify(error.detail ?? "").toLowerCase();
  const users = (d.users ?? []).flatMap((email, i) =>
    text.includes(email.toLowerCase()) ? [`${declaredKey(d, "users", i)} (${email})`] : [],
  );
  // One label per declared server, in the file's order: a declaration resolves whole or not at all.
  const servers = [...want.serverLabels.keys()].flatMap((id, i) =>
    text.includes(id.toLowerCase()) ? [`${declaredKey(d, "servers", i)} (${d.servers[i]})`] : [],
  );
  const why = `the service refused it (${error.status ?? "4xx"}${detail ? `: ${detail}` : ""})`;
  if (users.length > 0)
    return `${users.join(", ")}: ${why}: remove the user from sync_config.users, or add them to the project, then apply again`;
  if (servers.length > 0)
    return `${servers.join(", ")}: ${why}: check sync_config.servers against \`syncmirror plan\`'s candidates, then apply again`;
  return `${declaredKey(d)}: ${why}: fix the declaration, then apply again`;
}
