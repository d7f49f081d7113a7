/**
 * What `syncmirror --help` and `syncmirror <command> --help` print: usage, every flag with its
 * default, the exit codes and one example per command. Imports nothing, so the CLI can answer
 * `--help` without loading the commands.
 */

export type CommandName =
  | "run"
  | "sync"
  | "status"
  | "check"
  | "demo"
  | "simulate"
  | "changes"
  | "search"
  | "reindex"
  | "copy-store";

interface CommandHelp {
  summary: string;
  usage: string;
  flags: readonly (readonly [flag: string, description: string])[];
  exit: string;
  example: string;
}

const CONFIG_FLAG = [
  "--config FILE",
  "config file (default: $SYNCMIRROR_CONFIG, then config/syncmirror.yaml)",
] as const;
const HELP_FLAG = ["-h, --help", "print this help and exit 0"] as const;

export const HELP: Readonly<Record<CommandName, CommandHelp>> = {
  run: {
    summary: "the daemon: schedules every mirror, serves HTTP, resumes work left in flight",
    usage: "syncmirror run [--config FILE]",
    flags: [CONFIG_FLAG, HELP_FLAG],
    exit: "0 after SIGTERM/SIGINT (the current page commits, then it stops); 2 bad usage or config, a database path or http.listen that cannot be used",
    example: "SYNCMIRROR_API_TOKEN=... syncmirror run --config /config/syncmirror.yaml",
  },
  sync: {
    summary: "one pass now for the named mirrors, one after the other",
    usage:
      "syncmirror sync [--mirror NAME]... [--full] [--dry-run] [--allow-mass-delete] [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "a mirror to sync; repeat for several (default: every mirror in the config)"],
      ["--full", "a full snapshot (no since) with its sweep (default: incremental)"],
      [
        "--dry-run",
        "with --full: read the snapshot, write nothing, print what the sweep would revoke and delete (default: off)",
      ],
      ["--allow-mass-delete", "apply a sweep the mass-delete guard would hold (default: off)"],
      ["--json", "print one JSON object on stdout instead of the table (default: off)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 every mirror succeeded; 1 any mirror partial, failed or refused, the database in use, or stopped by a signal; 2 bad usage or config",
    example: "syncmirror sync --mirror eng-wiki --full --json",
  },
  status: {
    summary: "per-mirror state from the database (no token, no lock: works beside a daemon)",
    usage: "syncmirror status [--json] [--config FILE]",
    flags: [["--json", "print the JSON object /status serves (default: text)"], CONFIG_FLAG, HELP_FLAG],
    exit: "0; 2 bad usage or config",
    example: "syncmirror status --json",
  },
  check: {
    summary: "validate the config, open the database, reach the API, print each mirror's access matrix",
    usage: "syncmirror check [--config FILE]",
    flags: [CONFIG_FLAG, HELP_FLAG],
    exit: "0 no problems; 1 problems found (listed as PROBLEM lines); 2 bad usage or config",
    example: "docker exec syncmirror syncmirror check",
  },
  demo: {
    summary: "mirror a sample workspace from the bundled simulator into a temporary database",
    usage: "syncmirror demo [--keep]",
    flags: [["--keep", "keep the temporary directory and print its path (default: removed)"], HELP_FLAG],
    exit: "0; 2 bad usage",
    example: "syncmirror demo --keep",
  },
  simulate: {
    summary: "run the simulated upstream service alone, printing its base URL and token, until stopped",
    usage:
      "syncmirror simulate [--port N] [--seed N] [--users N] [--docs N] [--servers TYPE=N,...] [--latency-ms N]",
    flags: [
      ["--port N", "port on 127.0.0.1 (default: 0, any free port)"],
      ["--seed N", "seed of the generated workspace (default: 1)"],
      ["--users N", "users in the workspace (default: 3)"],
      ["--docs N", "documents (default: 50)"],
      [
        "--servers TYPE=N,...",
        "servers per type: notion, google_drive, google_docs, github (default: notion=1,github=1)",
      ],
      ["--latency-ms N", "delay every API answer by N ms, as a remote service would (default: 0)"],
      HELP_FLAG,
    ],
    exit: "0 after SIGTERM/SIGINT; 2 bad usage",
    example: "syncmirror simulate --port 8080 --docs 1000",
  },
  changes: {
    summary: "the change feed as JSON (the same shape as GET /v1/changes), from a saved seq",
    usage: "syncmirror changes --after SEQ [--limit N] [--mirror NAME] [--follow] [--config FILE]",
    flags: [
      ["--after SEQ", "the last seq already processed (required; 0 reads from the start)"],
      ["--limit N", "changes per page, 1 to 1000 (default: 100)"],
      ["--mirror NAME", "only changes recorded by, or keys visible through, this mirror (default: all)"],
      ["--follow", "keep printing pages as new changes commit, until stopped (default: one page)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0; 2 bad usage or config",
    example: "syncmirror changes --after 1200 --limit 500",
  },
  search: {
    summary: "full-text search over what one user may see (search.enabled: true)",
    usage: "syncmirror search --user EMAIL [--mirror NAME] [--limit N] [--json] [--config FILE] QUERY",
    flags: [
      ["--user EMAIL", "search as this user: only their live resources (required)"],
      ["--mirror NAME", "only through this mirror (default: every mirror)"],
      ["--limit N", "results, 1 to 100 (default: 20)"],
      ["--json", "print the JSON object GET /v1/search serves (default: text)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 (no results included); 2 bad usage or config, a query syntax error, search disabled",
    example: 'syncmirror search --user ana@example.com "release notes"',
  },
  reindex: {
    summary: "build or rebuild the search index from the mirror (stop the daemon first)",
    usage: "syncmirror reindex [--config FILE]",
    flags: [CONFIG_FLAG, HELP_FLAG],
    exit: "0; 1 the database is in use; 2 bad usage or config, search disabled",
    example: "syncmirror reindex --config /config/syncmirror.yaml",
  },
  "copy-store": {
    summary: "copy a SQLite mirror into the configured, empty PostgreSQL database (stop its daemon first)",
    usage: "syncmirror copy-store --from SQLITE_PATH [--config FILE]",
    flags: [
      ["--from SQLITE_PATH", "the SQLite mirror to copy: its database.path (required)"],
      [
        "--config FILE",
        "the config naming the target with database.url_env (default: $SYNCMIRROR_CONFIG, then config/syncmirror.yaml)",
      ],
      HELP_FLAG,
    ],
    exit: "0 copied; 1 the target is not empty (nothing copied), the SQLite mirror is in use, or a database error; 2 bad usage, a config without database.url_env, no file at --from",
    example:
      "SYNCMIRROR_DATABASE_URL=postgres://... syncmirror copy-store --from /data/mirror.db --config pg.yaml",
  },
};

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(HELP, name);
}

export function formatHelp(name: CommandName): string {
  const help = HELP[name];
  const width = Math.max(...help.flags.map(([flag]) => flag.length));
  return [
    `usage: ${help.usage}`,
    "",
    help.summary,
    "",
    "options:",
    ...help.flags.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
    "",
    `exit: ${help.exit}`,
    "",
    `example: ${help.example}`,
    "",
  ].join("\n");
}

/** The usage line and where the rest is, for a usage error. */
export function usageHint(name: CommandName): string {
  return `usage: ${HELP[name].usage}\n(syncmirror ${name} --help lists every option)`;
}

export function formatOverview(): string {
  const names = Object.keys(HELP) as CommandName[];
  const width = Math.max(...names.map((n) => n.length));
  return [
    "usage: syncmirror <command> [options]",
    "",
    "commands:",
    ...names.map((n) => `  ${n.padEnd(width)}  ${HELP[n].summary}`),
    "",
    "syncmirror <command> --help   usage, options with their defaults, exit codes, an example",
    "syncmirror --version          the installed version",
    "",
    "The config path defaults to $SYNCMIRROR_CONFIG, then config/syncmirror.yaml.",
    "",
  ].join("\n");
}
