/**
 * The config files syncmirror writes for a first run: `syncmirror init` (filled from a service it
 * asked, or with placeholders `check` explains) and `syncmirror simulate --print-config` (one
 * mirror per simulated sync config). Text with comments for the person who reads it next; the
 * tests load every variant with the real config loader.
 */
import { DEFAULT_TOKEN_ENV } from "./config-secrets.js";

export interface TemplateMirror {
  name: string;
  syncConfigId: string;
  /** The sync config's name upstream, shown beside the id. */
  remoteName?: string | undefined;
}

export interface ConfigTemplate {
  /** Comment lines at the top (without the `# `). */
  header: readonly string[];
  baseUrl: string;
  database: { path: string } | { urlEnv: string };
  listen: string;
  mirrors: readonly TemplateMirror[];
  /** Written commented out, for the reader to enable. */
  otherMirrors?: readonly TemplateMirror[];
  /** Against the local simulator: poll fast, and with `everyMinute` an incremental pass every minute. */
  simulator?: { everyMinute: boolean };
}

/** The first-run listen address: loopback, so `/status` answers without a token on this machine. */
export const FIRST_RUN_LISTEN = "127.0.0.1:9464";
export const FIRST_RUN_DATABASE_PATH = "data/mirror.db";

export function renderConfig(t: ConfigTemplate): string {
  const lines = [
    ...[...t.header, ""].map((line) => `# ${line}`.trimEnd()),
    "# Every key, its default and an example: docs/configuration.md in the syncmirror repository.",
    "",
    "api:",
    `  base_url: ${t.baseUrl}`,
    `  token_env: ${DEFAULT_TOKEN_ENV}   # the variable holding the token; never write the token here`,
    "database:",
    ...("path" in t.database
      ? [
          `  path: ${t.database.path}   # SQLite, relative to the working directory; the first sync creates it`,
        ]
      : [
          `  url_env: ${t.database.urlEnv}   # the variable holding the postgres:// URL (it carries a password)`,
        ]),
    "http:",
    `  listen: ${t.listen}   # the console (/), /metrics /healthz /readyz /status of syncmirror run; $SYNCMIRROR_HTTP_LISTEN overrides it`,
    ...(t.simulator ? simulatorDefaults(t.simulator.everyMinute) : []),
    "mirrors:",
    ...t.mirrors.flatMap((m) => mirrorLines(m, "")),
  ];
  if (t.otherMirrors && t.otherMirrors.length > 0) {
    lines.push("  # The project's other sync configs: uncomment one to mirror it too.");
    for (const m of t.otherMirrors) lines.push(...mirrorLines(m, "# "));
  }
  return `${lines.join("\n")}\n`;
}

function simulatorDefaults(everyMinute: boolean): string[] {
  return [
    "defaults:",
    "  # The simulator finishes a run within a few polls: against a real service, drop these.",
    "  poll_initial_seconds: 0.5",
    "  poll_max_seconds: 2",
    ...(everyMinute ? ['  incremental_cron: "* * * * *"   # every minute, to watch the daemon work'] : []),
  ];
}

function mirrorLines(m: TemplateMirror, comment: string): string[] {
  const remote = m.remoteName === undefined ? "" : `   # sync config ${JSON.stringify(m.remoteName)}`;
  return [`  ${comment}- name: ${m.name}${remote}`, `  ${comment}  sync_config_id: ${m.syncConfigId}`];
}

/** Local mirror names from remote config names: `[a-z0-9_-]+`, unique, `main` when nothing is left. */
export function mirrorNames(remoteNames: readonly (string | undefined)[]): string[] {
  const taken = new Set<string>();
  return remoteNames.map((remote) => {
    const base =
      (remote ?? "")
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .slice(0, 40)
        .replace(/^-+|-+$/g, "") || "main";
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  });
}
