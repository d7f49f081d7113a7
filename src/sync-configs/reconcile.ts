/**
 * The daemon's own apply (`manage_sync_configs: true`), one declared mirror at a time, under the
 * mirror's lease: at start-up, and before a pass when the declaration changed since it was last
 * applied (or its last apply failed) or the service's copy no longer matches it (edited upstream,
 * by hand or by another tool: the file is the source of truth). It never adopts and never prunes. What it cannot apply (a
 * user who left the project, a name taken, a server renamed away) is logged, counted in
 * `syncmirror_sync_config_apply_errors_total`, shown by `syncmirror_sync_config_drift` and stored
 * as the record's `last_error`; it never stops the daemon or another mirror.
 *
 * Before a pass the declaration is the one the file holds then, not at start-up: after an edit (and
 * an `apply` beside the daemon) the start-up copy is stale, and applying it would undo the edit,
 * giving back access the operator took away.
 */
import type { Config, MirrorConfig } from "../config.js";
import {
  AbortedError,
  ConfigError,
  issuesLine,
  SyncConfigNotAppliedError,
  SyncmirrorError,
} from "../errors.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { BoundMirror } from "../sync/context.js";
import { type ApplyDeps, applyEntry } from "./apply.js";
import { bindMirror } from "./bind.js";
import { declarationHash } from "./declaration-hash.js";
import { planMirror } from "./plan.js";
import { type DeclaredMirror, isDeclared } from "./resolve.js";

export interface ReconcileDeps extends ApplyDeps {
  /** The config the declaration is planned against. */
  config: Config;
  /** The file as it says now: a ConfigError when it no longer loads. */
  readConfig(): Config;
  log: Logger;
  metrics: Metrics;
  /**
   * Mirrors whose start-up apply had to wait (a pass in flight, or another replica's lease): the
   * service may have drifted from an unchanged declaration, so their next pass applies it anyway.
   */
  startupApplyOwed?: Set<string>;
}

/**
 * Resolves `"deferred"` when a change waits for the mirror's trigger in flight to end. `always`
 * plans against the service even for a declaration applied as it is; `checkUpstream` does so too,
 * but only between passes: an edit upstream found under a pass in flight waits for the next pass.
 */
export async function reconcileMirror(
  mirror: DeclaredMirror,
  deps: ReconcileDeps,
  options: { always: boolean; checkUpstream?: boolean },
): Promise<"deferred" | undefined> {
  const { store, log, metrics } = deps;
  const labels = { mirror: mirror.name };
  const record = await store.syncConfigs.find(mirror.name);
  const unchanged = record?.appliedHash === declarationHash(mirror.declared) && record.lastError === null;
  const always = options.always || (deps.startupApplyOwed?.has(mirror.name) ?? false);
  // Nothing to apply as far as the database knows: at most a look at the service's copy.
  const lookOnly = unchanged && !always;
  if (lookOnly && !options.checkUpstream) return;
  if (await store.triggers.findInFlight(mirror.name)) {
    if (lookOnly) return;
    if (always) deps.startupApplyOwed?.add(mirror.name);
    log.info(labels, "the declared sync config is applied once the pass in flight ends");
    return "deferred";
  }
  deps.startupApplyOwed?.delete(mirror.name);
  try {
    const result = await applyEntry(await planMirror(deps.config, mirror.name, deps), deps, {
      adopt: false,
      prune: false,
    });
    if (result.done === "refused") return failed(mirror.name, deps, result.message, true);
    metrics.syncConfigDrift.set(labels, 0);
    if (result.done !== "unchanged")
      log.info({ ...labels, sync_config_id: result.syncConfigId }, result.message);
  } catch (error) {
    // A stop (or a lease lost) is no drift: the apply runs again at the next start or pass.
    if (!(error instanceof SyncmirrorError) || error instanceof AbortedError) throw error;
    if (lookOnly && !(error instanceof ConfigError)) {
      // Only a look at the service, which did not answer: nothing is known to differ, and the pass
      // (which meets the same service) says what is wrong with it.
      log.warn(
        { ...labels, err: error.message },
        "could not compare the declared sync config with the service's",
      );
      return;
    }
    const message = error instanceof ConfigError ? issuesLine(error.issues) : error.message;
    return failed(mirror.name, deps, message, false);
  }
}

/**
 * The declaration as the file holds it now. A file that no longer loads, or no longer declares the
 * mirror, changes nothing upstream: the operator's intent is unknown, so the config stays as
 * applied (reverting it would be as wrong as guessing), the pass runs with it, and the mirror has a
 * problem until the file is fixed. A file that turned `manage_sync_configs` off stops the daemon's
 * apply at once, as that is the safe direction; everything else in it waits for a restart.
 */
async function reconcileAsFiled(
  mirror: DeclaredMirror,
  deps: ReconcileDeps,
): Promise<"deferred" | undefined> {
  let config: Config;
  try {
    config = deps.readConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return failed(
      mirror.name,
      deps,
      `${error.file} no longer loads (${issuesLine(error.issues)}): nothing was changed upstream and the mirror syncs with its sync config as applied; fix the file (\`syncmirror plan\` names each error)`,
      false,
    );
  }
  if (!config.manageSyncConfigs) return;
  const current = config.mirrors.find((m) => m.name === mirror.name);
  if (!current || !isDeclared(current))
    return failed(
      mirror.name,
      deps,
      `${config.file} no longer declares a sync config for mirror ${mirror.name}: nothing was changed upstream and the running daemon syncs it with its sync config as applied; declare it again, or restart the daemon to take the file's mirrors (\`syncmirror apply --prune\` deletes a config no mirror declares)`,
      false,
    );
  return reconcileMirror(current, { ...deps, config }, { always: false, checkUpstream: true });
}

/** Logged, counted, shown as drift, and (unless `apply` did it) stored as the record's error: a problem. */
async function failed(
  mirror: string,
  deps: ReconcileDeps,
  message: string,
  recorded: boolean,
): Promise<undefined> {
  const labels = { mirror };
  if (!recorded)
    await deps.store.syncConfigs.recordError(mirror, {
      error: message,
      at: deps.now().toISOString(),
      createRefused: false,
    });
  deps.metrics.syncConfigApplyErrors.inc(labels);
  deps.metrics.syncConfigDrift.set(labels, 1);
  deps.log.error({ ...labels, err: message }, "the declared sync config could not be applied");
  return undefined;
}

/**
 * Before a pass, under its lease: the declaration the file holds now applied if it differs from the
 * one applied (when the daemon manages them), then the mirror with its config id (`bound`);
 * undefined, logged, when a declaration was never applied. `deferred`: a change waits for the
 * trigger in flight, so the caller prepares again once that trigger ends, before a new one.
 */
export async function preparePass(
  mirror: MirrorConfig,
  deps: ReconcileDeps,
): Promise<{ bound: BoundMirror | undefined; deferred: boolean }> {
  const deferred =
    deps.config.manageSyncConfigs && isDeclared(mirror)
      ? (await reconcileAsFiled(mirror, deps)) === "deferred"
      : false;
  try {
    return { bound: await bindMirror(mirror, deps.store), deferred };
  } catch (error) {
    if (!(error instanceof SyncConfigNotAppliedError)) throw error;
    deps.log.error({ mirror: mirror.name, err: error.message }, "pass skipped: no sync config to trigger");
    return { bound: undefined, deferred };
  }
}
