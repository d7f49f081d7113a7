/** `syncmirror simulate`: the simulated upstream service alone, until SIGTERM / SIGINT. */
import { parseArgs } from "node:util";
import { type SourceType, startSimulator } from "../simulator/index.js";
import type { Command } from "./command.js";
import { usageHint } from "./help.js";

const SOURCE_TYPES: readonly SourceType[] = ["notion", "google_drive", "google_docs", "github"];

export const simulate: Command = async (args, io) => {
  let options: {
    port: number;
    seed: number;
    users: number;
    docs: number;
    latencyMs: number;
    serversPerType?: Partial<Record<SourceType, number>>;
  };
  try {
    const { values } = parseArgs({
      args,
      options: {
        port: { type: "string", default: "0" },
        seed: { type: "string", default: "1" },
        users: { type: "string", default: "3" },
        docs: { type: "string", default: "50" },
        servers: { type: "string" },
        "latency-ms": { type: "string", default: "0" },
      },
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
  } catch (error) {
    io.stderr.write(
      `syncmirror simulate: ${error instanceof Error ? error.message : String(error)}\n${usageHint("simulate")}\n`,
    );
    return 2;
  }
  if (io.signal.aborted) return 0;
  const startedAt = performance.now();
  const sim = await startSimulator({ ...options, clock: { real: true } });
  const startMs = Math.round(performance.now() - startedAt);
  io.stdout.write(
    [
      `base_url: ${sim.baseUrl}`,
      `token: ${sim.token}`,
      `project_id: ${sim.projectId}`,
      `sync_config_id: ${sim.syncConfigId}`,
      `users: ${sim.users.length}, servers: ${sim.servers.length}, docs: ${options.docs}, latency: ${options.latencyMs} ms (ready in ${startMs} ms)`,
      `admin: ${new URL(sim.baseUrl).origin}/_sim (POST /docs/edit-random {fraction}, GET|DELETE /requests; same token)`,
      `try: curl -H "Authorization: Bearer ${sim.token}" ${sim.baseUrl}/projects`,
      "",
    ].join("\n"),
  );
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    else io.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await sim.close();
  return 0;
};

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
