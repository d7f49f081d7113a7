/** Sync configs: validation of create/replace bodies, storage, and the shapes they are read back in. */
import { formatOffsetIso } from "./clock.js";
import { HttpError, invalid, notFound, requireObject } from "./http-error.js";
import { type AuthStatus, isAccessible } from "./people.js";
import type { ConfigRecord, SimState } from "./state.js";

export const MAX_SERVERS_PER_CONFIG = 10;
export const MAX_TEXT_CHARS = 50_000;

/** Past the 50,000-character limit, counted in code points: an emoji is one character but two UTF-16 units. */
export function overTextLimit(text: string): boolean {
  if (text.length <= MAX_TEXT_CHARS) return false;
  let count = 0;
  for (const _ of text) if (++count > MAX_TEXT_CHARS) return true;
  return false;
}

interface ConfigFields {
  name: string;
  instructions: string;
  serverIds: string[];
  allUsers: boolean;
  userEmails: string[];
}

/** POST /sync-configs: validates the body and stores a new config. */
export function createConfig(state: SimState, body: unknown): ConfigRecord {
  const input = requireObject(body);
  if (typeof input.project_id !== "string")
    throw invalid(["body", "project_id"], "Field required", "missing");
  if (input.project_id !== state.project.id) throw notFound("project");
  const fields = validateFields(state, input, "create");
  assertNameFree(state, fields.name, undefined);
  const now = state.clock.nowMs();
  const record: ConfigRecord = {
    id: state.newId(),
    projectId: state.project.id,
    ...fields,
    unavailable: new Set(),
    createdAtMs: now,
    updatedAtMs: now,
    seq: state.nextSeq(),
  };
  state.configs.set(record.id, record);
  return record;
}

/** PUT /sync-configs/{id}: every field is replaced; only future triggers see the change. */
export function replaceConfig(state: SimState, id: string, body: unknown): ConfigRecord {
  const record = getConfig(state, id);
  const input = requireObject(body);
  if (input.project_id !== undefined && input.project_id !== record.projectId) {
    throw new HttpError(400, "project_id cannot change");
  }
  const fields = validateFields(state, input, "replace");
  assertNameFree(state, fields.name, record.id);
  Object.assign(record, fields, { updatedAtMs: state.clock.nowMs() });
  const kept = new Set(fields.serverIds);
  for (const serverId of record.unavailable) if (!kept.has(serverId)) record.unavailable.delete(serverId);
  return record;
}

export function getConfig(state: SimState, id: string): ConfigRecord {
  const record = state.configs.get(id);
  if (!record) throw notFound("sync config");
  return record;
}

export function configView(state: SimState, record: ConfigRecord) {
  return {
    id: record.id,
    project_id: record.projectId,
    name: record.name,
    instructions: record.instructions,
    all_users: record.allUsers,
    user_emails: [...record.userEmails],
    server_instance_ids: [...record.serverIds],
    servers: record.serverIds.map((serverId) => {
      const server = state.serverById(serverId);
      return {
        server_instance_id: serverId,
        server_name: server?.server_name ?? null,
        display_name: server?.display_name ?? null,
        source_type: server?.source_type ?? "unknown",
        available: server !== undefined && !record.unavailable.has(serverId),
      };
    }),
    created_at: formatOffsetIso(record.createdAtMs),
    updated_at: formatOffsetIso(record.updatedAtMs),
  };
}

/** The users a config covers now: the project's users, or the listed ones (members or not). */
export function configUsers(state: SimState, record: ConfigRecord): { email: string; user: number }[] {
  if (record.allUsers) {
    return state.people.projectUsers().map((user) => ({ email: state.people.emails[user] ?? "", user }));
  }
  return record.userEmails.map((email) => ({ email, user: state.people.getIndex(email) }));
}

/**
 * GET /sync-configs/{id}/access items. A user who left the project is `not_authenticated` on every
 * server (the service's example shows them so): their grants no longer count, and the trigger skips
 * them before looking at any server. Otherwise a server paused in the config is `not_syncable`,
 * as the trigger skips it.
 */
export function accessItems(state: SimState, record: ConfigRecord) {
  return configUsers(state, record).map(({ email, user }) => {
    const projectUser = state.people.isProjectUser(user);
    return {
      user_email: email,
      project_user: projectUser,
      servers: record.serverIds.map((serverId) => {
        const status = projectUser ? authStatusIn(state, record, user, serverId) : "not_authenticated";
        return { server_instance_id: serverId, auth_status: status, accessible: isAccessible(status) };
      }),
    };
  });
}

function authStatusIn(state: SimState, record: ConfigRecord, user: number, serverId: string): AuthStatus {
  const server = state.serverById(serverId);
  if (!server || record.unavailable.has(serverId)) return "not_syncable";
  return state.people.authOf(user, server.index);
}

function validateFields(
  state: SimState,
  input: Record<string, unknown>,
  mode: "create" | "replace",
): ConfigFields {
  const name = requireString(input, "name");
  if (name.trim() === "") throw invalid(["body", "name"], "String should have at least 1 character");
  const instructions = requireString(input, "instructions");
  if (overTextLimit(instructions)) {
    throw new HttpError(400, `instructions exceed ${MAX_TEXT_CHARS} characters`);
  }
  const serverIds = requireStringArray(input, "server_instance_ids");
  if (serverIds.length < 1 || serverIds.length > MAX_SERVERS_PER_CONFIG) {
    throw new HttpError(400, `server_instance_ids must list 1 to ${MAX_SERVERS_PER_CONFIG} servers`);
  }
  if (new Set(serverIds).size !== serverIds.length)
    throw new HttpError(400, "server_instance_ids has duplicates");
  const unknown = serverIds.filter((id) => !state.serverById(id));
  if (unknown.length > 0) throw new HttpError(400, `unknown server_instance_ids: ${unknown.join(", ")}`);
  if (mode === "replace" && (input.all_users === undefined || input.user_emails === undefined)) {
    throw invalid(
      ["body", input.all_users === undefined ? "all_users" : "user_emails"],
      "Field required",
      "missing",
    );
  }
  if (input.all_users !== undefined && typeof input.all_users !== "boolean") {
    throw invalid(["body", "all_users"], "Input should be a valid boolean");
  }
  const allUsers = input.all_users === true;
  const userEmails =
    input.user_emails === undefined || input.user_emails === null
      ? []
      : requireStringArray(input, "user_emails");
  validateUsers(state, allUsers, userEmails);
  return { name, instructions, serverIds, allUsers, userEmails };
}

function validateUsers(state: SimState, allUsers: boolean, emails: string[]): void {
  if (allUsers && emails.length > 0) throw new HttpError(400, "give all_users or user_emails, not both");
  if (!allUsers && emails.length === 0)
    throw new HttpError(400, "user_emails is empty and all_users is false");
  if (new Set(emails.map((e) => e.toLowerCase())).size !== emails.length) {
    throw new HttpError(400, "user_emails has duplicates");
  }
  const bad = emails.filter((email) => {
    const user = state.people.findIndex(email);
    return user === undefined || !state.people.isProjectUser(user);
  });
  if (bad.length > 0) throw new HttpError(400, `not users of this project: ${bad.join(", ")}`);
}

function assertNameFree(state: SimState, name: string, selfId: string | undefined): void {
  for (const other of state.configs.values()) {
    if (other.id !== selfId && other.projectId === state.project.id && other.name === name) {
      throw new HttpError(409, `a sync config named "${name}" already exists in this project`);
    }
  }
}

function requireString(input: Record<string, unknown>, field: string): string {
  const value = input[field];
  if (value === undefined) throw invalid(["body", field], "Field required", "missing");
  if (typeof value !== "string")
    throw invalid(["body", field], "Input should be a valid string", "string_type", value);
  return value;
}

function requireStringArray(input: Record<string, unknown>, field: string): string[] {
  const value = input[field];
  if (value === undefined) throw invalid(["body", field], "Field required", "missing");
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw invalid(["body", field], "Input should be a valid list of strings", "list_type", value);
  }
  return value;
}
