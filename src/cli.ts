#!/usr/bin/env node
/**
 * argv -> command. The only place that sets the exit code or calls process.exit.
 *
 * The signal handlers are installed before the commands are loaded: loading them (SQLite, drizzle,
 * undici, the simulator) takes a few hundred milliseconds, and a SIGTERM that arrived then used to
 * kill the process outright instead of stopping it cleanly. Static imports here are the two
 * modules that import nothing.
 */
import { readFileSync } from "node:fs";
import type { Command, CommandIo } from "./commands/command.js";
import { type CommandName, formatHelp, formatOverview, isCommandName } from "./commands/help.js";
import { AbortedError, OutputClosedError } from "./errors.js";

const controller = new AbortController();
/**
 * How long a stop may take before the process ends anyway: a statement waiting on a row another
 * database session keeps locked does not hear the stop, and a second signal no longer kills the
 * process (below). `run` exits 0 within 10 s of a stop as promised, having cut its own drain at 6 s;
 * any other command was interrupted (exit 1). What was not committed is rolled back by the database.
 */
const STOP_DEADLINE_MS = 9000;
/** A line as the commands' pino logger writes it (pino is not loaded yet when a signal comes). */
const logLine = (level: number, msg: string) =>
  process.stderr.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, msg })}\n`);
// Commands log the stop themselves: stderr carries JSON log lines only (docs/operations.md#logs).
const stop = (signal: NodeJS.Signals) => {
  if (controller.signal.aborted) return;
  controller.abort(new AbortedError(`${signal} received`));
  setTimeout(() => {
    logLine(
      50,
      `still stopping ${STOP_DEADLINE_MS / 1000} s after ${signal}: exiting now; what was not committed is rolled back`,
    );
    process.exit(command === "run" ? 0 : 1);
  }, STOP_DEADLINE_MS).unref();
};
// Kept for every later signal too: Ctrl-C on `npm exec syncmirror run` arrives twice (from the
// terminal and forwarded by npm), and a second signal with no handler killed the drain it began.
// The drain is bounded (docs/operations.md), so no second signal is needed to force an exit.
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
/**
 * SIGHUP, whose default is to end the process on the spot: a one-shot command's terminal hung up,
 * so it stops as on SIGTERM. The daemon is sent it by operators who expect a reload: it already
 * reads the declared sync configs before each pass and needs a restart for anything else, so it
 * says so and keeps running rather than die without its drain.
 */
process.on("SIGHUP", () => {
  if (command !== "run") return stop("SIGHUP");
  logLine(
    40,
    "SIGHUP received and ignored: the daemon reads the declared sync configs again before each pass; restart it (SIGTERM drains) to apply any other change to the config file",
  );
});
/**
 * Commands whose work is their output. When their reader closes the pipe early (`syncmirror
 * changes ... | head -c 100`) it took what it wanted: the command stops as on a signal, cleans up
 * (demo removes its directory) and exits quietly. Any other command changes something (a pass, a
 * copy, an apply): it finishes without its output, and its exit code says how the work went; a
 * stop with exit 0 would say a copy was made that was rolled back.
 */
const STOPS_WITH_ITS_READER: ReadonlySet<CommandName> = new Set<CommandName>([
  "status",
  "check",
  "demo",
  "simulate",
  "changes",
  "search",
  "plan",
  "history",
  "problems",
]);
let command: CommandName | undefined;
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (controller.signal.aborted) return;
  if (error.code !== "EPIPE") {
    controller.abort(new AbortedError(`cannot write to stdout (${error.code ?? error.message})`));
    return;
  }
  if (command === undefined || STOPS_WITH_ITS_READER.has(command)) controller.abort(new OutputClosedError());
});

const LOADERS: Record<CommandName, () => Promise<Command>> = {
  run: async () => (await import("./commands/run.js")).run,
  sync: async () => (await import("./commands/sync.js")).sync,
  status: async () => (await import("./commands/status.js")).status,
  check: async () => (await import("./commands/check.js")).check,
  demo: async () => (await import("./commands/demo.js")).demo,
  simulate: async () => (await import("./commands/simulate.js")).simulate,
  init: async () => (await import("./commands/init.js")).init,
  changes: async () => (await import("./commands/changes.js")).changes,
  search: async () => (await import("./commands/search.js")).search,
  reindex: async () => (await import("./commands/reindex.js")).reindex,
  plan: async () => (await import("./commands/plan.js")).plan,
  apply: async () => (await import("./commands/apply.js")).apply,
  "copy-store": async () => (await import("./commands/copy-store.js")).copyStore,
  pause: async () => (await import("./commands/pause.js")).pause,
  resume: async () => (await import("./commands/resume.js")).resume,
  trigger: async () => (await import("./commands/trigger.js")).trigger,
  history: async () => (await import("./commands/history.js")).history,
  problems: async () => (await import("./commands/problems.js")).problems,
  "approve-sweep": async () => (await import("./commands/approve-sweep.js")).approveSweep,
  forget: async () => (await import("./commands/forget.js")).forget,
};

/**
 * `syncmirror --config FILE status` as `syncmirror status --config FILE`: the command comes first
 * in SPEC, but a global option before it is how many CLIs are typed.
 */
function commandFirst(argv: string[]): string[] {
  const [first, second, third, ...rest] = argv;
  if (first === "--config" && second !== undefined && third !== undefined)
    return [third, first, second, ...rest];
  if (first?.startsWith("--config=") && second !== undefined) return [second, first, ...argv.slice(2)];
  return argv;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = commandFirst(argv);
  if (name === undefined) {
    process.stderr.write(formatOverview());
    return 2;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    const topic = args[0];
    process.stdout.write(topic !== undefined && isCommandName(topic) ? formatHelp(topic) : formatOverview());
    return 0;
  }
  if (name === "--version" || name === "-v" || name === "version") {
    process.stdout.write(`syncmirror ${readVersion()}\n`);
    return 0;
  }
  if (!isCommandName(name)) {
    process.stderr.write(`syncmirror: unknown command "${name}": \`syncmirror --help\` lists the commands\n`);
    return 2;
  }
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(formatHelp(name));
    return 0;
  }
  // `ps` shows which command runs; set once the handlers above are in place.
  process.title = `syncmirror ${name}`;
  command = name;
  const run = await LOADERS[name]();
  const io: CommandIo = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    signal: controller.signal,
    isTty: process.stdout.isTTY === true,
    stderrIsTty: process.stderr.isTTY === true,
  };
  return run(args, io);
}

function readVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
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
    // As above: a handle the failed command left open must not keep the process alive.
    setTimeout(() => process.exit(1), 2000).unref();
  },
);
