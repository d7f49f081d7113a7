import type { Writable } from "node:stream";

/** What a command may touch of the outside world; the CLI builds it from the process. */
export interface CommandIo {
  stdout: Writable;
  stderr: Writable;
  /** Environment, handed to `loadConfig`; commands never read `process.env` themselves. */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on SIGTERM / SIGINT. */
  signal: AbortSignal;
  /** Whether stdout is a terminal (progress lines only then). */
  isTty: boolean;
  /** Whether stderr is a terminal (log lines for a person then, JSON otherwise). */
  stderrIsTty?: boolean;
}

/** A command takes its own argv (after the command name) and resolves to the process exit code. */
export type Command = (args: string[], io: CommandIo) => Promise<number>;
