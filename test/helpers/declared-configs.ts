/**
 * For the suites of declared sync configs (`plan`, `apply`, the daemon's own apply): a harness
 * whose config file declares its mirrors' sync configs, and reads of what the service and the
 * database hold.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, beforeAll } from "vitest";
import { parse, stringify } from "yaml";
import type { ConfigView, Simulator } from "../../src/simulator/index.js";
import { buildOnce } from "../integration/daemon/setup.js";
import { createHarness, type Harness } from "./mirror-harness.js";

/** Three servers: "Team Wiki" (notion), "Google Drive", "GitHub". */
export const DECLARED_SIM = { users: 3, docs: 60, serversPerType: { notion: 1, google_drive: 1, github: 1 } };

export type Declaration = Record<string, unknown>;

/** The mirror `main`'s declaration, with `overrides`. */
export function wiki(overrides: Declaration = {}): Declaration {
  return {
    name: "Wiki",
    instructions: "Collect the wiki.",
    servers: ["Team Wiki", "GitHub"],
    users: ["user1@example.com", "user2@example.com"],
    ...overrides,
  };
}

/**
 * Registers a suite's hooks (`dist/` built, each test's harness closed after it) and returns how a
 * test gets its harness: `main` declaring `wiki()`.
 */
export function declaredSuite(): () => Promise<Harness> {
  let current: Harness | undefined;
  beforeAll(buildOnce);
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async () => {
    current = await createHarness({ sim: DECLARED_SIM });
    writeMirrors(current, { main: wiki() });
    return current;
  };
}

/**
 * Rewrites the config's mirrors: a declaration (an object) or a `sync_config_id` (a string) per
 * mirror name; `top` adds top-level keys (`manage_sync_configs`).
 */
export function writeMirrors(
  h: Harness,
  mirrors: Record<string, Declaration | string>,
  top: Record<string, unknown> = {},
): void {
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, unknown>;
  config.mirrors = Object.entries(mirrors).map(([name, m]) =>
    typeof m === "string" ? { name, sync_config_id: m } : { name, sync_config: m },
  );
  writeFileSync(h.configPath, stringify({ ...config, ...top }));
}

/** The upstream config of that name; throws when there is none. */
export function remoteNamed(sim: Simulator, name: string): ConfigView {
  const found = sim.configs.list().filter((c) => c.name === name);
  if (found.length !== 1) throw new Error(`${found.length} configs named "${name}" upstream`);
  return found[0] as ConfigView;
}

export function serverId(sim: Simulator, name: string): string {
  const server = sim.servers.find((s) => s.server_name === name);
  if (!server) throw new Error(`no server "${name}"`);
  return server.server_instance_id;
}

export interface ManagedRow {
  sync_config_id: string | null;
  origin: string | null;
  adopted_at: string | null;
  applied_hash: string | null;
  full_pending_after: number | null;
  last_error: string | null;
}

export function managedRow(h: Harness, mirror = "main"): ManagedRow | undefined {
  return h.query<ManagedRow>(
    "SELECT sync_config_id, origin, adopted_at, applied_hash, full_pending_after, last_error FROM managed_sync_configs WHERE mirror = ?",
    mirror,
  )[0];
}
