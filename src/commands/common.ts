/**
 * Shared by the commands: argument parsing with the common `--config` flag, and turning the
 * errors a command cannot recover from into a message and an exit code.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { type Config, loadConfig, resolveConfigPath } from "../config.js";
import {
  ConfigError,
  DatabasePathError,
  DatabaseRefusedError,
  ListenError,
  SchemaTooNewError,
  SyncmirrorError,
  UsageError,
} from "../errors.js";
import type { CommandIo } from "./command.js";
import { type CommandName, usageHint } from "./help.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Parses a command's flags (plus `--config`); a flag it does not know is a UsageError with the usage line. */
export function parseCommandArgs<O extends Options>(
  name: CommandName,
  args: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({
      args,
      options: { config: { type: "string" }, ...options },
      allowPositionals,
      strict: true,
    });
  } catch (cause) {
    throw new UsageError(`${(cause as Error).message}\n${usageHint(name)}`, { cause });
  }
}

export function loadCommandConfig(flag: string | undefined, io: CommandIo): Config {
  return loadConfig(resolveConfigPath(flag, io.env), io.env);
}

/**
 * Runs the command body; usage and config errors (with a database path or listen address that
 * cannot work) exit 2, other known errors exit 1, each with a message that says what to do (the
 * store raises whatever the database does wrong as DatabaseError: full disk, lost connection).
 */
export async function withErrors(io: CommandIo, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (isSetupError(error)) {
      io.stderr.write(`syncmirror: ${(error as Error).message}\n`);
      return 2;
    }
    if (error instanceof SyncmirrorError) {
      io.stderr.write(`syncmirror: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/** Errors that exit 2: bad usage, or a config (its database path, its listen address) that cannot work. */
export function isSetupError(error: unknown): boolean {
  return (
    error instanceof UsageError ||
    error instanceof ConfigError ||
    error instanceof DatabasePathError ||
    error instanceof ListenError ||
    // A database that refuses the configuration, or was migrated by a newer syncmirror, is fixed
    // by the operator like a config error: waiting or retrying changes nothing.
    error instanceof DatabaseRefusedError ||
    error instanceof SchemaTooNewError
  );
}
