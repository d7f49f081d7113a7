/**
 * JSON-lines logging (pino) on stderr. The platform token is admin over the whole workspace: any
 * field that may hold it is censored here, as a second line behind code that never logs it.
 *
 * One way to carry a pass's context: `withLogContext({ mirror, trigger_id })` around the work;
 * every logger made here adds those fields to each line (pino's mixin), however deep the code
 * that logs. `log.child` is only for fields of one component's own lines (the scheduler's mode).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pino from "pino";
import { printable } from "./terminal-text.js";

export type Logger = pino.Logger;

/** Paths censored in every log line (fast-redact syntax: `*` is one level of any key). */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  "token",
  "*.token",
  "api_token",
  "*.api_token",
  "api.token",
  "authorization",
  "*.authorization",
  "Authorization",
  "*.Authorization",
  "headers.authorization",
  "headers.Authorization",
  "*.headers.authorization",
  "req.headers.authorization",
]);

export const REDACT_CENSOR = "[redacted]";

export interface LoggerOptions {
  /** pino level name: trace, debug, info (default), warn, error, fatal, silent. */
  level?: string;
  /** Added to every line as `name`. */
  name?: string;
  /** One readable line per entry (`HH:MM:SS LEVEL message key=value`) instead of JSON: for a terminal. */
  human?: boolean;
}

/**
 * A pino logger writing JSON lines to `destination`, by default stderr (fd 2, asynchronous; pino
 * flushes it on exit). Tests pass their own stream to read what was written. With `human`, each
 * line is reformatted for a person after redaction (pino-pretty is not a dependency).
 */
export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  const target = options.human
    ? humanStream(destination ?? process.stderr)
    : (destination ?? pino.destination({ fd: 2, sync: false }));
  return pino(
    {
      level: options.level ?? "info",
      ...(options.name ? { name: options.name } : {}),
      redact: { paths: [...REDACT_PATHS], censor: REDACT_CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
      mixin: () => ({ ...context.getStore() }),
    },
    target,
  );
}

const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO ",
  40: "WARN ",
  50: "ERROR",
  60: "FATAL",
};
const HIDDEN_FIELDS = new Set(["level", "time", "msg", "pid", "hostname", "name"]);

/**
 * `12:00:01 WARN  message key=value ...`. Each line starts by clearing the terminal line, so a
 * progress line drawn on stdout (`sync` on a terminal) is replaced rather than run into; no other
 * control character reaches the terminal.
 */
function humanStream(out: pino.DestinationStream): pino.DestinationStream {
  return {
    write(line: string) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      const fields = Object.entries(entry)
        .filter(([key]) => !HIDDEN_FIELDS.has(key))
        .map(([key, value]) => `${key}=${describeField(value)}`);
      const level = LEVEL_NAMES[entry.level as number] ?? String(entry.level);
      const time = String(entry.time ?? "").slice(11, 19);
      // A message or field may quote the service or a document: its control characters as `\xHH`.
      const text = `${time} ${level} ${String(entry.msg ?? "")}${fields.map((f) => ` ${f}`).join("")}`;
      out.write(`\r\x1b[K${printable(text)}\n`);
    },
  };
}

function describeField(value: unknown): string {
  if (typeof value === "string") return /\s/.test(value) ? JSON.stringify(value) : value;
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === "string") return JSON.stringify(message);
  return JSON.stringify(value);
}

/** A logger that writes nothing, for tests and library callers that do not log. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

const context = new AsyncLocalStorage<Readonly<Record<string, unknown>>>();

/**
 * Runs `fn` with fields (`mirror`, `trigger_id`) that every log line written inside it carries,
 * such as the API client's retry warnings far below.
 */
export function withLogContext<T>(fields: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
  return context.run({ ...context.getStore(), ...fields }, fn);
}
