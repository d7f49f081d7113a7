/**
 * JSON-lines logging (pino) on stderr. The platform token is admin over the whole workspace: any
 * field that may hold it is censored here, as a second line behind code that never logs it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pino from "pino";

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
}

/**
 * A pino logger writing JSON lines to `destination`, by default stderr (fd 2, asynchronous; pino
 * flushes it on exit). Tests pass their own stream to read what was written.
 */
export function createLogger(options: LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: options.level ?? "info",
      ...(options.name ? { name: options.name } : {}),
      redact: { paths: [...REDACT_PATHS], censor: REDACT_CENSOR },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
    },
    destination ?? pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that writes nothing, for tests and library callers that do not log. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

const context = new AsyncLocalStorage<Readonly<Record<string, unknown>>>();

/**
 * Runs `fn` with fields (`mirror`, `trigger_id`) that code far below, such as the API client's
 * retry warnings, adds to its log lines with `logContext()` without being handed a logger.
 */
export function withLogContext<T>(fields: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
  return context.run({ ...context.getStore(), ...fields }, fn);
}

/** The fields of the enclosing `withLogContext`, or none. */
export function logContext(): Readonly<Record<string, unknown>> {
  return context.getStore() ?? {};
}
