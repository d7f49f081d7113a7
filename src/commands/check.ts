/**
 * `syncmirror check`: validates the config, reaches the API, resolves each mirror's remote
 * config and prints the user x server access matrix with its problems. Exit 0 ok, 1 problems
 * found, 2 config invalid.
 */
import { isBaseUrlWrong, WRONG_BASE_URL_ADVICE } from "../api/base-url.js";
import { createApiClient } from "../api/client.js";
import type { AccessItem, SyncConfig } from "../api/schemas.js";
import { type MirrorConfig, requireToken } from "../config.js";
import { NotFoundError, SyncmirrorError } from "../errors.js";
import { silentLogger } from "../log.js";
import { createIoLogger } from "../runtime.js";
import { checkStore } from "../store/open-store.js";
import type { Command, CommandIo } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";

export const check: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("check", args, {});
    const config = loadCommandConfig(values.config, io);
    const token = requireToken(config);
    io.stdout.write(`config ${config.file}: ok (${config.mirrors.length} mirror(s))\n`);
    const api = createApiClient({
      baseUrl: config.api.baseUrl,
      token,
      tokenEnv: config.api.tokenEnv,
      timeoutMs: config.api.timeoutSeconds * 1000,
      maxAttempts: Math.min(config.api.maxAttempts, 3),
      log: createIoLogger(io),
    });
    try {
      const database = await checkStore(config, silentLogger());
      io.stdout.write(`${database.ok ? "" : "PROBLEM "}${database.message}\n`);
      let problems = database.ok ? 0 : 1;
      for (const mirror of config.mirrors) problems += await checkMirror(mirror, api, io);
      io.stdout.write(problems === 0 ? "no problems found\n" : `${problems} problem(s) found\n`);
      return problems === 0 ? 0 : 1;
    } finally {
      await api.close();
    }
  });

async function checkMirror(
  mirror: MirrorConfig,
  api: ReturnType<typeof createApiClient>,
  io: CommandIo,
): Promise<number> {
  const out = (line: string) => io.stdout.write(`${line}\n`);
  out(`\nmirror ${mirror.name} -> sync config ${mirror.syncConfigId}`);
  let remote: SyncConfig;
  let access: AccessItem[];
  try {
    remote = await api.getSyncConfig(mirror.syncConfigId, io.signal);
    access = await api.listAccess(mirror.syncConfigId, io.signal);
  } catch (error) {
    if (error instanceof NotFoundError && (await isBaseUrlWrong(api, io.signal))) {
      out(`  PROBLEM ${WRONG_BASE_URL_ADVICE}`);
      return 1;
    }
    if (error instanceof NotFoundError) {
      out(
        `  PROBLEM remote config missing: no sync config ${mirror.syncConfigId} upstream; fix mirrors[].sync_config_id`,
      );
      return 1;
    }
    if (error instanceof SyncmirrorError) {
      out(`  PROBLEM cannot reach the API: ${error.message}`);
      return 1;
    }
    throw error;
  }
  const problems: string[] = [];
  out(`  remote name: ${remote.name ?? "(unnamed)"}; servers: ${remote.servers.length}`);
  for (const s of remote.servers) {
    if (s.available === false) {
      problems.push(
        `server ${s.server_name ?? s.server_instance_id} is not available (paused or no longer syncable): triggers skip it`,
      );
    }
  }
  const servers = remote.servers.map((s) => ({
    id: s.server_instance_id,
    label: s.server_name ?? s.source_type,
  }));
  const header = ["user", "project", ...servers.map((s) => s.label)];
  const rows = access.map((item) => {
    if (!item.project_user)
      problems.push(`${item.user_email} is not a project user: they lose access at the next full pass`);
    const cells = servers.map((server) => {
      const entry = item.servers.find((x) => x.server_instance_id === server.id);
      if (!entry) return "-";
      if (!entry.accessible)
        problems.push(`${item.user_email} cannot be synced on ${server.label}: ${entry.auth_status}`);
      return entry.accessible ? `ok (${entry.auth_status})` : `NO (${entry.auth_status})`;
    });
    return [item.user_email, item.project_user ? "yes" : "NO", ...cells];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  for (const row of [header, ...rows])
    out(
      `  ${row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd()}`,
    );
  for (const p of problems) out(`  PROBLEM ${p}`);
  return problems.length;
}
