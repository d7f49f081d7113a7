/**
 * From a declaration to the body the service takes: the project by id or name (or the only one the
 * token sees), each server by id, server name or display name (`GET /sync-configs/sources`). A
 * name that matches no server, or several, is a config error naming the key and the candidates.
 */
import type { ApiClient } from "../api/client.js";
import type { SyncableSource } from "../api/schemas.js";
import type { SyncConfigFields } from "../api/sync-config-api.js";
import type { MirrorConfig } from "../config.js";
import { bothMirror, type DeclaredSyncConfig, declaredKey } from "../config-sync-config.js";
import { ConfigError, type ConfigIssue } from "../errors.js";
import { declarationHash } from "./declaration-hash.js";

export type DeclaredMirror = MirrorConfig & { readonly declared: DeclaredSyncConfig };

/** What a declaration asks the service for, with the names it used for each server. */
export interface DesiredSyncConfig {
  mirror: DeclaredMirror;
  projectId: string;
  projectName: string;
  fields: SyncConfigFields;
  /** Server id -> how to show it: the name the file used (the server's name beside an id). */
  serverLabels: Map<string, string>;
  hash: string;
}

export function isDeclared(mirror: MirrorConfig): mirror is DeclaredMirror {
  return mirror.declared !== null;
}

/** Resolves every declaration; all issues at once, as a ConfigError of `file`. */
export async function resolveDeclarations(
  mirrors: readonly DeclaredMirror[],
  api: ApiClient,
  file: string,
  signal?: AbortSignal,
): Promise<DesiredSyncConfig[]> {
  if (mirrors.length === 0) return [];
  const projects = await api.listProjects(signal);
  const sources = new Map<string, Promise<SyncableSource[]>>();
  const issues: ConfigIssue[] = [];
  const resolved: DesiredSyncConfig[] = [];
  for (const mirror of mirrors) {
    const d = mirror.declared;
    const project = findProject(projects, d);
    if ("issue" in project) {
      issues.push(project.issue);
      continue;
    }
    if (!sources.has(project.id)) sources.set(project.id, api.listSources(project.id, signal));
    const available = (await sources.get(project.id)) ?? [];
    const serverLabels = new Map<string, string>();
    d.servers.forEach((name, i) => {
      const match = matchServer(name, available, `project "${project.name}"`);
      const key = declaredKey(d, "servers", i);
      if ("problem" in match) issues.push({ path: key, message: match.problem });
      else if (serverLabels.has(match.server.server_instance_id))
        issues.push({
          path: key,
          message: `names the same server as an earlier entry ("${serverLabels.get(match.server.server_instance_id)}")`,
        });
      else serverLabels.set(match.server.server_instance_id, serverLabel(name, match.server));
    });
    resolved.push({
      mirror,
      projectId: project.id,
      projectName: project.name,
      fields: {
        name: d.name,
        instructions: d.instructions,
        server_instance_ids: [...serverLabels.keys()],
        all_users: d.allUsers,
        user_emails: d.users ? [...d.users] : [],
      },
      serverLabels,
      hash: declarationHash(d),
    });
  }
  issues.push(...sameConfig(resolved));
  if (issues.length > 0) throw new ConfigError(file, issues);
  return resolved;
}

/**
 * Two declarations of one name in one project, which the file's own check misses when they write
 * the project differently (by id, by name, or not at all): the service has one config for both.
 */
function sameConfig(resolved: readonly DesiredSyncConfig[]): ConfigIssue[] {
  const first = new Map<string, DeclaredMirror>();
  return resolved.flatMap(({ mirror, projectId, fields }) => {
    const key = `${projectId}\n${fields.name}`;
    const other = first.get(key);
    if (!other) {
      first.set(key, mirror);
      return [];
    }
    return [
      {
        path: declaredKey(mirror.declared, "name"),
        message: bothMirror(other.name, mirror.name, `the sync config named "${fields.name}"`),
      },
    ];
  });
}

function findProject(
  projects: readonly { id: string; name?: string | undefined }[],
  d: DeclaredSyncConfig,
): { id: string; name: string } | { issue: ConfigIssue } {
  const named = (p: { id: string; name?: string | undefined }) => ({ id: p.id, name: p.name ?? p.id });
  const list = projects.map((p) => `"${p.name ?? p.id}" (${p.id})`).join(", ") || "none";
  if (d.project === null) {
    const [only] = projects;
    if (projects.length === 1 && only) return named(only);
    return {
      issue: {
        path: declaredKey(d, "project"),
        message: `is needed: the token sees ${projects.length} projects (${list}); name one by id or name`,
      },
    };
  }
  const byId = projects.find((p) => p.id === d.project);
  const byName = projects.filter((p) => p.name === d.project);
  if (byId) return named(byId);
  const [one] = byName;
  if (byName.length === 1 && one) return named(one);
  return {
    issue: {
      path: declaredKey(d, "project"),
      message:
        byName.length > 1
          ? `"${d.project}" names ${byName.length} projects (${list}): name it by id`
          : `no project "${d.project}"; the token sees: ${list}`,
    },
  };
}

/**
 * The one server `name` designates: its id, else its server name or display name exactly, else
 * the same ignoring case. Several servers at the first level that matches is ambiguous.
 */
export function matchServer(
  name: string,
  sources: readonly SyncableSource[],
  where: string,
): { server: SyncableSource } | { problem: string } {
  const byId = sources.find((s) => s.server_instance_id === name);
  if (byId) return { server: byId };
  const names = (s: SyncableSource) => [s.server_name, s.display_name].filter((n): n is string => !!n);
  for (const same of [(a: string) => a === name, (a: string) => a.toLowerCase() === name.toLowerCase()]) {
    const found = sources.filter((s) => names(s).some(same));
    const [one] = found;
    if (found.length === 1 && one) return { server: one };
    if (found.length > 1) {
      return {
        problem: `"${name}" names ${found.length} servers of ${where} (${found.map(describeServer).join(", ")}): name one by its server_instance_id`,
      };
    }
  }
  const candidates = sources.map(describeServer).join(", ") || "none";
  return { problem: `no syncable server of ${where} is named "${name}"; candidates: ${candidates}` };
}

/** A declared server as a plan shows it: as the file names it, with the server's name beside an id. */
function serverLabel(name: string, server: SyncableSource): string {
  const known = server.server_name ?? server.display_name;
  return name === server.server_instance_id && known ? `${known} (${name})` : name;
}

function describeServer(s: SyncableSource): string {
  const shown = s.display_name && s.display_name !== s.server_name ? ` / "${s.display_name}"` : "";
  return `"${s.server_name ?? s.display_name ?? s.server_instance_id}"${shown} (${s.source_type}, ${s.server_instance_id})`;
}
