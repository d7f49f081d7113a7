/**
 * `syncmirror simulate`: the simulated upstream service alone, until SIGTERM / SIGINT. With
 * `--configs N` it holds N sync configs (mirrors may not share one); with `--print-config` it prints
 * a ready syncmirror config with one mirror per config instead of its banner.
 */
import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { FIRST_RUN_DATABASE_PATH, FIRST_RUN_LISTEN, mirrorNames, renderConfig } from "../config-template.js";
import { listenError } from "../listen-error.js";
import { type Simulator, type SourceType, startSimulator } from "../simulator/index.js";
import type { Command, CommandIo } from "./command.js";
import { joinDashValues, parseArgsMessage, withErrors } from "./common.js";
import { usageHint } from "./help.js";

/** The variable `--print-config --postgres` names for the database URL (docs/scaling-out.md). */
const DATABASE_URL_ENV = "SYNCMIRROR_DATABASE_URL";

const SOURCE_TYPES: readonly SourceType[] = ["notion", "google_drive", "google_docs", "github"];

interface SimulatorFlags {
  port: number;
  seed: number;
  users: number;
  docs: number;
  latencyMs: number;
  serversPerType?: Partial<Record<SourceType, number>>;
}

interface OutputFlags {
  configs: number;
  printConfig: boolean;
  postgres: boolean;
}

export const simulate: Command = async (args, io) => {
  let options: SimulatorFlags;
  let output: OutputFlags;
  try {
    const flags = {
      port: { type: "string", default: "0" },
      seed: { type: "string", default: "1" },
      users: { type: "string", default: "3" },
      docs: { type: "string", default: "50" },
      servers: { type: "string" },
      "latency-ms": { type: "string", default: "0" },
      configs: { type: "string", default: "1" },
      "print-config": { type: "boolean", default: false },
      postgres: { type: "boolean", default: false },
    } as const;
    const { values } = parseArgs({
      // `--docs -1` reaches intOption, whose message gives the range.
      args: joinDashValues(args, flags),
      options: flags,
      strict: true,
      allowPositionals: false,
    });
    options = {
      port: intOption("port", values.port, 0, 65_535),
      seed: intOption("seed", values.seed, 0, 2 ** 32 - 1),
      users: intOption("users", values.users, 1, 10_000),
      docs: intOption("docs", values.docs, 0, 10_000_000),
      latencyMs: intOption("latency-ms", values["latency-ms"], 0, 600_000),
    };
    if (values.servers !== undefined) options.serversPerType = serversOption(values.servers);
    output = {
      configs: intOption("configs", values.configs, 1, 100),
      printConfig: values["print-config"] === true,
      postgres: values.postgres === true,
    };
    if (output.postgres && !output.printConfig) throw new Error("--postgres goes with --print-config");
  } catch (error) {
    io.stderr.write(
      `syncmirror simulate: ${error instanceof Error ? parseArgsMessage("simulate", error) : String(error)} ${usageHint("simulate")}\n`,
    );
    return 2;
  }
  if (io.signal.aborted) return 0;
  return withErrors(io, () => serve(options, output, io));
};

async function serve(options: SimulatorFlags, output: OutputFlags, io: CommandIo): Promise<number> {
  const startedAt = performance.now();
  // A user restarts simulate beside the mirror it fed: its passes must not reuse that mirror's ids.
  const sim = await startSimulator({
    ...options,
    clock: { real: true },
    passIdSeed: randomInt(2 ** 32),
  }).catch((error: unknown) => {
    throw isListenFailure(error)
      ? listenError(error.address ?? "127.0.0.1", options.port, "--port", error)
      : error;
  });
  const configIds = [sim.syncConfigId];
  while (configIds.length < output.configs) configIds.push(sim.configs.create());
  const startMs = Math.round(performance.now() - startedAt);
  const banner = [
    `base_url: ${sim.baseUrl}`,
    `token: ${sim.token}`,
    `project_id: ${sim.projectId}`,
    ...configIds.map((id) => `sync_config_id: ${id}`),
    `users: ${sim.users.length}, servers: ${sim.servers.length}, docs: ${options.docs}, latency: ${options.latencyMs} ms (ready in ${startMs} ms)`,
    `admin: ${new URL(sim.baseUrl).origin}/_sim, same token (docs/reference/cli.md, \`simulate\` admin routes):`,
    "  POST /docs/edit-random {fraction, seed?}, POST /docs/remove-random {fraction, seed?}",
    "  POST /outcomes {task, error?, user?, server_instance_id?, times?}",
    '  POST /faults {route: "GET /projects" or "*", kind: "503", times?, ...}, GET|DELETE /faults',
    "  POST /premium {enabled, status?}, POST /cannot-start {detail}, GET|DELETE /requests",
    `try: curl -H "Authorization: Bearer ${sim.token}" ${sim.baseUrl}/projects`,
  ];
  io.stdout.write(
    output.printConfig ? printedConfig(sim, configIds, banner, output.postgres) : `${banner.join("\n")}\n`,
  );
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    else io.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await sim.close();
  return 0;
}

function isListenFailure(error: unknown): error is NodeJS.ErrnoException & { address?: string } {
  return (error as NodeJS.ErrnoException | null)?.syscall === "listen";
}

/** A syncmirror config for this simulator, one mirror per sync config, the banner as its comments. */
function printedConfig(sim: Simulator, configIds: string[], banner: string[], postgres: boolean): string {
  const remoteNames = configIds.map((id) => sim.configs.get(id).name);
  const names = mirrorNames(remoteNames);
  return renderConfig({
    header: [
      "syncmirror config for the simulator started by `syncmirror simulate --print-config`; it",
      "answers only while that process runs. Export the token below in $SYNCMIRROR_API_TOKEN.",
      "",
      ...banner,
    ],
    baseUrl: sim.baseUrl,
    database: postgres ? { urlEnv: DATABASE_URL_ENV } : { path: FIRST_RUN_DATABASE_PATH },
    listen: FIRST_RUN_LISTEN,
    mirrors: configIds.map((id, i) => ({
      name: names[i] as string,
      syncConfigId: id,
      remoteName: remoteNames[i],
    })),
    simulator: { everyMinute: true },
  });
}

/** `notion=1,github=2`: servers per source type (the default is one notion and one github server). */
function serversOption(raw: string): Partial<Record<SourceType, number>> {
  const perType: Partial<Record<SourceType, number>> = {};
  for (const part of raw.split(",")) {
    const [type, count] = part.split("=");
    if (!SOURCE_TYPES.includes(type as SourceType)) {
      throw new Error(
        `--servers takes TYPE=N pairs with TYPE one of ${SOURCE_TYPES.join(", ")}, got "${raw}"`,
      );
    }
    perType[type as SourceType] = intOption("servers", count, 0, 100);
  }
  if (Object.values(perType).every((n) => n === 0)) throw new Error("--servers needs at least one server");
  return perType;
}

function intOption(name: string, raw: string | undefined, min: number, max: number): number {
  const value = Number(raw);
  if (raw === undefined || raw.trim() === "" || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`--${name} must be an integer from ${min} to ${max}, got "${raw ?? ""}"`);
  }
  return value;
}
