/**
 * Shared by the commands: argument parsing with the common `--config` flag, and turning the
 * errors a command cannot recover from into a message and an exit code.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { type Config, loadConfig, type MirrorConfig, readLogLevel, resolveConfigPath } from "../config.js";
import {
  AbortedError,
  ConfigError,
  DatabasePathError,
  DatabaseRefusedError,
  DatabaseUnavailableError,
  ListenError,
  OutputClosedError,
  SchemaTooNewError,
  SyncmirrorError,
  UsageError,
  unknownMirrorMessage,
} from "../errors.js";
import { createLogger } from "../log.js";
import { openStoreForReading } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import { printableLines } from "../terminal-text.js";
import type { CommandIo } from "./command.js";
import { type CommandName, flagUsage, usageHint } from "./help.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * Parses a command's flags (plus `--config`); a flag it does not know, or one taking a single value
 * given twice, is a UsageError with the usage line.
 */
export function parseCommandArgs<O extends Options>(
  name: CommandName,
  args: string[],
  options: O,
  allowPositionals = false,
) {
  const all = { config: { type: "string" as const }, ...options };
  const parse = () => {
    try {
      return parseArgs({
        args: joinDashValues(args, options),
        options: all,
        allowPositionals,
        strict: true,
        tokens: true,
      });
    } catch (cause) {
      throw new UsageError(`${parseArgsMessage(name, cause as Error)} ${usageHint(name)}`, { cause });
    }
  };
  const { values, positionals, tokens } = parse();
  const repeated = repeatedOption(tokens, all);
  if (repeated !== undefined) throw new UsageError(`--${repeated}: given more than once ${usageHint(name)}`);
  return { values, positionals };
}

/**
 * An option taking one value given twice (`pause --mirror a --mirror b`): parseArgs keeps the last
 * and drops the other without a word, so the command would act on one of the two named.
 */
function repeatedOption(
  tokens: readonly { kind: string; name?: string }[],
  options: Options,
): string | undefined {
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== "option" || token.name === undefined) continue;
    const option = options[token.name];
    if (option?.type !== "string" || option.multiple) continue;
    if (seen.has(token.name)) return token.name;
    seen.add(token.name);
  }
  return undefined;
}

/**
 * parseArgs's message as one line saying what to give. An option followed by another option
 * (`--mirror --full`) lost its value: parseArgs calls that ambiguous over three lines and explains
 * how to pass a value starting with a dash, which is not what happened (`joinDashValues` already
 * passed the negative numbers on).
 */
export function parseArgsMessage(name: CommandName, error: Error): string {
  const option = /^Option '(--[\w-]+)/.exec(error.message)?.[1];
  const noValue = /argument missing|argument is ambiguous/.test(error.message);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && option && noValue)
    return `${option} needs a value: ${flagUsage(name, option) ?? `${option} VALUE`}`;
  const unknown = /^Unknown option '([^']*)'/.exec(error.message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && unknown) return `unknown option ${unknown}`;
  const extra = /^Unexpected argument '([^']*)'/.exec(error.message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL" && extra !== undefined)
    return `unexpected argument "${extra}": syncmirror ${name} takes options only`;
  return (error.message.split("\n")[0] as string).replace(/^./, (c) => c.toLowerCase());
}

/**
 * `--after -1` as `--after=-1`: parseArgs calls a value starting with "-" ambiguous, and the
 * value's own check says better what is wrong with it ("--after: must be 0 or more").
 */
export function joinDashValues(args: string[], options: Options): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = args[i + 1];
    if (arg === "--") return [...joined, ...args.slice(i)];
    const takesValue = arg.startsWith("--") && options[arg.slice(2)]?.type === "string";
    if (takesValue && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/** The config, after `LOG_LEVEL` is checked: a typo there fails every command alike, before any work. */
export function loadCommandConfig(flag: string | undefined, io: CommandIo): Config {
  readLogLevel(io.env);
  return loadConfig(resolveConfigPath(flag, io.env), io.env);
}

/**
 * Runs the command body; usage and config errors (with a database path or listen address that
 * cannot work) exit 2, other known errors exit 1, each with a message that says what to do (the
 * store raises whatever the database does wrong as DatabaseError: full disk, lost connection).
 * A command stopped because its stdout's reader went away (`| head`) ends quietly with 0.
 */
export async function withErrors(io: CommandIo, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (stoppedByClosedOutput(io, error)) return 0;
    if (isSetupError(error)) {
      io.stderr.write(`syncmirror: ${(error as Error).message}\n`);
      return 2;
    }
    if (error instanceof SyncmirrorError) {
      // It may quote the service (an error's detail): no control character of it reaches the terminal.
      io.stderr.write(`syncmirror: ${printableLines(failureMessage(error).split("\n"))}`);
      return 1;
    }
    throw error;
  }
}

/** What a command that stops on `error` (exit 1) says, on stderr and as its `--json` document's `error.message`. */
function failureMessage(error: SyncmirrorError): string {
  // The daemon waits and retries (see daemon.ts); a one-shot command stops here, having changed nothing.
  if (error instanceof DatabaseUnavailableError)
    return `${error.message}; nothing was changed: run the command again once the database answers`;
  return error.message;
}

/** The `error` of a `--json` command's document when the command stopped on an error (exit 1). */
export interface JsonFailure {
  code: string;
  message: string;
}

/** One JSON document on stdout, as every `--json` command prints it. */
export function writeJson(io: CommandIo, document: unknown): void {
  io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
}

/**
 * Runs the part of a `--json` command that can fail once its flags and config are good: when it
 * stops on an error that exits 1, stdout still gets the command's one JSON document,
 * `document(failure)` (by default `{ error: { code, message } }`), so a script reading stdout never
 * gets empty input. The message is the stderr line's, which `withErrors` prints with the exit code.
 * Bad usage or config (exit 2), an error that is not ours, or stdout's reader gone print nothing.
 */
export async function withJsonFailure<T>(
  io: CommandIo,
  json: boolean,
  body: () => Promise<T>,
  document: (failure: JsonFailure) => unknown = (failure) => ({ error: failure }),
): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (json && error instanceof SyncmirrorError && !isSetupError(error) && !stoppedByClosedOutput(io, error))
      writeJson(io, document({ code: error.code, message: failureMessage(error) }));
    throw error;
  }
}

function stoppedByClosedOutput(io: CommandIo, error: unknown): boolean {
  return (
    io.signal.reason instanceof OutputClosedError &&
    (error instanceof AbortedError || error instanceof OutputClosedError)
  );
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

/**
 * What `status`, `history`, `problems` and `approve-sweep` do: `read` on the store without the
 * lock, its result printed as JSON with `--json`, else as `text` says; under `--json` an error
 * that stops it prints its JSON document (`withJsonFailure`). Before the first sync `read` gets an
 * empty store, and `onNoMirror` the line that says so.
 */
export async function printFromStore<T>(
  io: CommandIo,
  config: Config,
  json: boolean,
  read: (store: Store) => Promise<T>,
  text: (value: T) => string,
  onNoMirror?: (notice: string) => void,
): Promise<void> {
  const value = await withJsonFailure(io, json, () => withStoreUnlocked(config, read, onNoMirror));
  if (json) writeJson(io, value);
  else io.stdout.write(text(value));
}

/**
 * Runs `fn` on the configured store without the writer lock, so it works beside a running daemon;
 * before the first sync on an empty store, creating nothing (`openStoreForReading`).
 */
export async function withStoreUnlocked<T>(
  config: Config,
  fn: (store: Store) => Promise<T>,
  onNoMirror?: (notice: string) => void,
): Promise<T> {
  const log = createLogger({ level: "warn", name: "syncmirror" });
  const store = await openStoreForReading(config, log, onNoMirror);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** The named mirrors as a set, in the order first named (a repeated name counts once); none named: every mirror. */
export function selectMirrors(config: Config, names: string[]): MirrorConfig[] {
  if (names.length === 0) return [...config.mirrors];
  return [...new Set(names)].map((name) => {
    const mirror = config.mirrors.find((m) => m.name === name);
    if (!mirror) {
      throw new UsageError(
        unknownMirrorMessage(
          name,
          config.mirrors.map((m) => m.name),
          config.file,
        ),
      );
    }
    return mirror;
  });
}
