/**
 * `syncmirror init [--simulator URL] [--config FILE]`: writes a minimal working config, never over
 * an existing file. With `--simulator` it asks that service (through the API client, with the
 * token in $SYNCMIRROR_API_TOKEN) for its project's sync configs and mirrors the oldest one; without
 * it, it writes placeholders that every command, `check` first, names until they are replaced.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { createApiClient } from "../api/client.js";
import type { SyncConfigListItem } from "../api/schemas.js";
import { requireDefaultToken, resolveConfigPath } from "../config.js";
import { PLACEHOLDERS } from "../config-placeholders.js";
import {
  FIRST_RUN_DATABASE_PATH,
  FIRST_RUN_LISTEN,
  mirrorNames,
  renderConfig,
  type TemplateMirror,
} from "../config-template.js";
import { createMissingDirectories, isDirectory } from "../create-directories.js";
import {
  ConfigExistsError,
  SyncmirrorError,
  UnauthorizedError,
  UnavailableError,
  UsageError,
} from "../errors.js";
import { describeFsError } from "../fs-errors.js";
import { createIoLogger } from "../runtime.js";
import type { Command, CommandIo } from "./command.js";
import { parseCommandArgs, withErrors } from "./common.js";

/** Readable by all (the config holds no secret), writable by the owner only; a stricter umask narrows them. */
const SHARED_FILE = 0o644;
const SHARED_DIR = 0o755;

/** The simulator's API prefix (docs/reference/upstream-api.md: every path is relative to `{base_url}`, which ends in it). */
const API_PREFIX = "/api/v1";

export const init: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("init", args, { simulator: { type: "string" } });
    const file = resolveConfigPath(values.config, io.env);
    if (namesDirectory(file))
      throw new UsageError(
        `${file} is a directory: name the config file itself, e.g. --config ${join(file, "syncmirror.yaml")}`,
      );
    // Refused before asking anyone; the exclusive write below settles a race.
    if (existsSync(file)) throw new ConfigExistsError(file);
    const written =
      values.simulator === undefined ? placeholderConfig() : await simulatorConfig(values.simulator, io);
    // Never writable by others, whatever the umask: whoever can edit the config can point
    // api.base_url at their own server and receive the token with the next request.
    createMissingDirectories(resolve(file), (reason, cause) => unwritable(file, reason, cause), SHARED_DIR);
    try {
      // "wx": the file is created or nothing is written, even against a writer racing this one.
      writeFileSync(file, written.text, { flag: "wx", mode: SHARED_FILE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new ConfigExistsError(file);
      throw unwritable(file, describeFsError(error), error);
    }
    const flag = values.config === undefined ? "" : ` --config ${values.config}`;
    io.stdout.write(`wrote ${file}: ${written.summary}\nnext: ${written.next.replaceAll("{flag}", flag)}\n`);
    return 0;
  });

/** `dir/`, or a directory that exists: not a file init could write. */
function namesDirectory(file: string): boolean {
  return file.endsWith("/") || file.endsWith(sep) || isDirectory(file);
}

/** The path the caller gave cannot take a file: theirs to change, like a bad flag (exit 2). */
function unwritable(file: string, reason: string, cause?: unknown): UsageError {
  return new UsageError(
    `cannot write ${file}: ${reason}: name a file in a directory this user can write with --config FILE`,
    { cause },
  );
}

interface Written {
  text: string;
  summary: string;
  next: string;
}

function placeholderConfig(): Written {
  return {
    text: renderConfig({
      header: [
        "syncmirror config written by `syncmirror init`. Replace the two REPLACE-WITH- values below,",
        "then run `syncmirror check`: it names any placeholder left, then reaches the service.",
      ],
      baseUrl: PLACEHOLDERS.baseUrl,
      database: { path: FIRST_RUN_DATABASE_PATH },
      listen: FIRST_RUN_LISTEN,
      mirrors: [{ name: "main", syncConfigId: PLACEHOLDERS.syncConfigId }],
    }),
    summary: "a template with placeholders in api.base_url and mirrors[0].sync_config_id",
    next: "replace them, then run syncmirror check{flag}",
  };
}

async function simulatorConfig(url: string, io: CommandIo): Promise<Written> {
  const baseUrl = simulatorBaseUrl(url);
  const token = requireDefaultToken(io.env, "the token syncmirror simulate printed");
  const api = createApiClient({
    baseUrl,
    token,
    timeoutMs: 10_000,
    maxAttempts: 2,
    retriedBy: "operator",
    log: createIoLogger(io),
  });
  let found: { project: string; configs: SyncConfigListItem[] } | undefined;
  try {
    const [project] = await api.listProjects(io.signal);
    if (project !== undefined)
      found = {
        project: project.name ?? project.id,
        configs: await collect(api.listSyncConfigs(project.id, io.signal)),
      };
  } catch (error) {
    // The address or the token given to init is wrong: the caller's to fix, like a bad flag.
    if (error instanceof SyncmirrorError)
      throw new UsageError(`--simulator ${url}: ${simulatorProblem(error, baseUrl)}`, { cause: error });
    throw error;
  } finally {
    await api.close();
  }
  // Newest first: the oldest is the simulator's own default config, the same every time.
  const configs = [...(found?.configs ?? [])].reverse();
  const names = mirrorNames(configs.map((c) => c.name));
  const mirrors: TemplateMirror[] = configs.map((c, i) => ({
    name: names[i] as string,
    syncConfigId: c.id,
    remoteName: c.name,
  }));
  const [first, ...others] = mirrors;
  const header = [`syncmirror config written by \`syncmirror init --simulator ${url}\`.`];
  const render = (mirror: TemplateMirror) =>
    renderConfig({
      header,
      baseUrl,
      database: { path: FIRST_RUN_DATABASE_PATH },
      listen: FIRST_RUN_LISTEN,
      mirrors: [mirror],
      otherMirrors: others,
      simulator: { everyMinute: false },
    });
  if (first === undefined) {
    const where =
      found === undefined ? "the service lists no project" : `project ${found.project} has no sync config`;
    return {
      text: render({ name: "main", syncConfigId: PLACEHOLDERS.syncConfigId }),
      summary: `base_url ${baseUrl}; ${where}, so mirrors[0].sync_config_id holds a placeholder`,
      next: "create a sync config, put its id there, then run syncmirror check{flag}",
    };
  }
  return {
    text: render(first),
    summary: `mirror ${first.name} of sync config ${first.syncConfigId} in project ${found?.project}, at ${baseUrl}`,
    next: `syncmirror check{flag}, then syncmirror sync{flag} (both read the token from $SYNCMIRROR_API_TOKEN, as init did)`,
  };
}

/**
 * What went wrong asking the simulator, said for `init`: the API client's own advice names
 * `api.base_url` and a platform token, which the caller of `init --simulator` has neither of yet.
 */
function simulatorProblem(error: SyncmirrorError, baseUrl: string): string {
  if (error instanceof UnauthorizedError)
    return `the token in $SYNCMIRROR_API_TOKEN was rejected (${error.status ?? "refused"} on ${error.method} ${error.route}): export the token syncmirror simulate printed`;
  if (error instanceof UnavailableError && error.status === undefined) {
    const code = (error.cause as NodeJS.ErrnoException | undefined)?.code;
    return `nothing answers at ${new URL(baseUrl).origin}${code ? ` (${code})` : ""}: start syncmirror simulate, then give the address it printed`;
  }
  return error.message;
}

/** The simulator's root (`http://127.0.0.1:8080`) or its base URL (`.../api/v1`): the base URL. */
function simulatorBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new UsageError(
      `--simulator: ${JSON.stringify(url)} is not a URL: give the address syncmirror simulate printed, e.g. http://127.0.0.1:8080`,
      { cause },
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new UsageError(`--simulator: ${JSON.stringify(url)} is not an http:// or https:// URL`);
  const path = parsed.pathname.replace(/\/+$/, "");
  return `${parsed.origin}${path === "" ? API_PREFIX : path}`;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
