/**
 * What would change if a declaration were applied to a remote config: field by field, servers and
 * users as additions and removals (the service ignores their order, and the case of emails).
 */
import type { SyncConfig } from "../api/schemas.js";
import type { DesiredSyncConfig } from "./resolve.js";

export type FieldChange =
  | { field: "name" | "instructions"; from: string; to: string }
  | { field: "servers" | "users"; add: string[]; remove: string[] }
  | { field: "all_users"; from: boolean; to: boolean };

export function diffSyncConfig(
  desired: Pick<DesiredSyncConfig, "fields" | "serverLabels">,
  remote: SyncConfig,
): FieldChange[] {
  const want = desired.fields;
  const changes: FieldChange[] = [];
  if (remote.name !== want.name) changes.push({ field: "name", from: remote.name, to: want.name });
  if (remote.instructions !== want.instructions)
    changes.push({ field: "instructions", from: remote.instructions, to: want.instructions });
  const remoteServers = new Map(
    remote.servers.map((s) => [
      s.server_instance_id,
      s.server_name ?? s.display_name ?? s.server_instance_id,
    ]),
  );
  const servers = setChange(
    new Map(want.server_instance_ids.map((id) => [id, desired.serverLabels.get(id) ?? id])),
    remoteServers,
  );
  if (servers) changes.push({ field: "servers", ...servers });
  if (remote.all_users !== want.all_users)
    changes.push({ field: "all_users", from: remote.all_users, to: want.all_users });
  const byEmail = (emails: readonly string[]) => new Map(emails.map((e) => [e.toLowerCase(), e]));
  const users = setChange(
    byEmail(want.all_users ? [] : want.user_emails),
    byEmail(remote.all_users ? [] : remote.user_emails),
  );
  if (users) changes.push({ field: "users", ...users });
  return changes;
}

/** Labels of the keys only one side has, or undefined when both have the same keys. */
function setChange(
  want: ReadonlyMap<string, string>,
  have: ReadonlyMap<string, string>,
): { add: string[]; remove: string[] } | undefined {
  const add = [...want].filter(([key]) => !have.has(key)).map(([, label]) => label);
  const remove = [...have].filter(([key]) => !want.has(key)).map(([, label]) => label);
  return add.length + remove.length > 0 ? { add, remove } : undefined;
}
