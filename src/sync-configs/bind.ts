/**
 * A declared mirror's remote config id is the one `apply` recorded in the database: read at the
 * start of each pass, so every replica and every restart uses the same config.
 */
import type { Config, MirrorConfig } from "../config.js";
import { ConfigError, type ConfigIssue, SyncConfigNotAppliedError } from "../errors.js";
import type { Store } from "../store/store.js";
import type { BoundMirror } from "../sync/context.js";

/** The mirror with its config id; SyncConfigNotAppliedError for a declaration never applied. */
export async function bindMirror(mirror: MirrorConfig, store: Store): Promise<BoundMirror> {
  if (isBound(mirror)) return mirror;
  const record = await store.syncConfigs.find(mirror.name);
  if (!record?.syncConfigId || !record.origin)
    throw new SyncConfigNotAppliedError(mirror.name, mirror.declared?.name ?? "");
  return Object.freeze({ ...mirror, syncConfigId: record.syncConfigId });
}

/**
 * Two mirrors must not mirror one config (each would adopt the other's runs): the file's ids are
 * checked when it loads, and what declared mirrors were bound to, here. A ConfigError naming both.
 */
export async function checkBindings(config: Config, store: Store): Promise<void> {
  const records = new Map((await store.syncConfigs.list()).map((r) => [r.mirror, r]));
  const byId = new Map<string, MirrorConfig>();
  const issues: ConfigIssue[] = [];
  config.mirrors.forEach((mirror, i) => {
    const id = mirror.syncConfigId ?? records.get(mirror.name)?.syncConfigId;
    if (!id) return;
    const other = byId.get(id);
    if (!other) {
      byId.set(id, mirror);
      return;
    }
    issues.push({
      path: mirror.declared ? `mirrors[${i}].sync_config` : `mirrors[${i}].sync_config_id`,
      message: `mirrors "${other.name}" and "${mirror.name}" both mirror sync config ${id}${mirror.declared || other.declared ? " (a declared config, as applied)" : ""}; one trigger per sync config at a time: keep one of them`,
    });
  });
  if (issues.length > 0) throw new ConfigError(config.file, issues);
}

function isBound(mirror: MirrorConfig): mirror is BoundMirror {
  return mirror.syncConfigId !== null;
}
