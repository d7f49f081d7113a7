#!/usr/bin/env node
/**
 * argv -> command. The only place that sets the exit code or calls process.exit.
 */
import { check } from "./commands/check.js";
import type { Command, CommandIo } from "./commands/command.js";
import { demo } from "./commands/demo.js";
import { run } from "./commands/run.js";
import { simulate } from "./commands/simulate.js";
import { status } from "./commands/status.js";
import { sync } from "./commands/sync.js";
import { AbortedError } from "./errors.js";

const COMMANDS: Record<string, Command> = { run, sync, status, check, demo, simulate };

const USAGE = `usage: syncmirror <command> [--config FILE]

commands:
  run        the daemon: schedules every mirror, serves HTTP, resumes work left in flight
  sync       one pass now: [--mirror NAME]... [--full] [--dry-run] [--allow-mass-delete] [--json]
  status     per-mirror state [--json]
  check      validate the config, reach the API, print the access matrix
  demo       mirror a sample workspace from the bundled simulator into a temporary database
  simulate   run the simulated upstream service [--port N] [--seed N] [--users N] [--docs N]
             [--servers TYPE=N,...]

The config path defaults to $SYNCMIRROR_CONFIG, then config/syncmirror.yaml.
`;

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`syncmirror: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const controller = new AbortController();
  // Commands log the stop themselves: stderr carries JSON log lines only (SPEC "Logs").
  const stop = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted) controller.abort(new AbortedError(`${signal} received`));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  const io: CommandIo = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    signal: controller.signal,
    isTty: process.stdout.isTTY === true,
  };
  return command(args, io);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // Everything is closed by now; should a stray handle keep the loop alive, do not hang on it.
    setTimeout(() => process.exit(code), 2000).unref();
  },
  (error: unknown) => {
    process.stderr.write(
      `syncmirror: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
