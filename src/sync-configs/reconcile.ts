/**
 * The daemon's own apply (`manage_sync_configs: true`), one declared mirror at a time, under the
 * mirror's lease: at start-up, and before a pass when the declaration changed since it was last
 * applied (or its last apply failed). It never adopts and never prunes. What it cannot apply (a
 * user who left the project, a name taken, a server renamed away) is logged, counted in
 * `syncmirror_sync_config_apply_errors_total`, shown by `syncmirror_sync_config_drift` and stored
 * as the record's `last_error`; it never stops the daemon or another mirror.
 */
import type { Config, MirrorConfig } from "../config.js";
import { ConfigError, SyncConfigNotAppliedError, SyncmirrorError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { BoundMirror } from "../sync/context.js";
import { type ApplyDeps, applyEntry } from "./apply.js";
import { bindMirror } from "./bind.js";
import { declarationHash } from "./declaration-hash.js";
import { planMirror } from "./plan.js";
import { type DeclaredMirror, isDeclared } from "./resolve.js";

export interface ReconcileDeps extends ApplyDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
}

export async function reconcileMirror(
  mirror: DeclaredMirror,
  deps: ReconcileDeps,
  options: { always: boolean },
): Promise<void> {
  const { store, log, metrics } = deps;
  const labels = { mirror: mirror.name };
  const record = await store.syncConfigs.find(mirror.name);
  const unchanged = record?.appliedHash === declarationHash(mirror.declared) && record.lastError === null;
  if (unchanged && !options.always) return;
  if (await store.triggers.findInFlight(mirror.name)) {
    log.info(labels, "the declared sync config is applied once the pass in flight ends");
    return;
  }
  const fail = async (message: string, recorded: boolean) => {
    if (!recorded)
      await store.syncConfigs.recordError(mirror.name, {
        error: message,
        at: deps.now().toISOString(),
        createRefused: false,
      });
    metrics.syncConfigApplyErrors.inc(labels);
    metrics.syncConfigDrift.set(labels, 1);
    log.error({ ...labels, err: message }, "the declared sync config could not be applied");
  };
  try {
    const result = await applyEntry(await planMirror(deps.config, mirror.name, deps), deps, {
      adopt: false,
      prune: false,
    });
    if (result.done === "refused") return fail(result.message, true);
    metrics.syncConfigDrift.set(labels, 0);
    if (result.done !== "unchanged")
      log.info({ ...labels, sync_config_id: result.syncConfigId }, result.message);
  } catch (error) {
    if (!(error instanceof SyncmirrorError)) throw error;
    return fail(
      error instanceof ConfigError
        ? error.issues.map((i) => `${i.path}: ${i.message}`).join("; ")
        : error.message,
      false,
    );
  }
}

/**
 * Before a pass, under its lease: the declaration applied if it changed (when the daemon manages
 * them), then the mirror with its config id; undefined, logged, when a declaration was never applied.
 */
export async function preparePass(
  mirror: MirrorConfig,
  deps: ReconcileDeps,
): Promise<BoundMirror | undefined> {
  if (deps.config.manageSyncConfigs && isDeclared(mirror))
    await reconcileMirror(mirror, deps, { always: false });
  try {
    return await bindMirror(mirror, deps.store);
  } catch (error) {
    if (!(error instanceof SyncConfigNotAppliedError)) throw error;
    deps.log.error({ mirror: mirror.name, err: error.message }, "pass skipped: no sync config to trigger");
    return undefined;
  }
}
