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
  | "init"
  | "changes"
  | "search"
  | "reindex"
  | "plan"
  | "apply"
  | "copy-store"
  | "pause"
  | "resume"
  | "trigger"
  | "history"
  | "problems"
  | "approve-sweep"
  | "forget";

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
        "with --full: read the snapshot, write nothing, print what the sweep would revoke and delete, and which sweeps the mass-delete guard would hold (default: off)",
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
    exit: "0; 1 the database does not answer (--json: a JSON error document); 2 bad usage or config",
    example: "syncmirror status --json",
  },
  check: {
    summary: "validate the config, open the database, reach the API, print each mirror's access matrix",
    usage: "syncmirror check [--config FILE]",
    flags: [CONFIG_FLAG, HELP_FLAG],
    exit: "0 no problems; 1 problems found (listed as PROBLEM lines; a rejected token or an API that does not answer is one line, and no mirror is checked); 2 bad usage or config, or a database that refuses it (a database.path that is no SQLite database) or that a newer syncmirror migrated",
    example: "docker exec syncmirror syncmirror check",
  },
  demo: {
    summary: "mirror a sample workspace from the bundled simulator into a temporary database",
    usage: "syncmirror demo [--keep]",
    flags: [["--keep", "keep the temporary directory and print its path (default: removed)"], HELP_FLAG],
    exit: "0; 2 bad usage, or no temporary directory it can create (set TMPDIR)",
    example: "syncmirror demo --keep",
  },
  simulate: {
    summary: "run the simulated upstream service alone, printing its base URL and token, until stopped",
    usage:
      "syncmirror simulate [--port N] [--seed N] [--users N] [--docs N] [--servers TYPE=N,...] [--latency-ms N] [--configs N] [--print-config [--postgres]]",
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
      ["--configs N", "sync configs to serve, each over every server and user; one line per id (default: 1)"],
      [
        "--print-config",
        "print a ready syncmirror config (one mirror per sync config, the banner as comments) instead of the banner (default: off)",
      ],
      [
        "--postgres",
        "with --print-config: the mirror in PostgreSQL, database.url_env: SYNCMIRROR_DATABASE_URL (default: data/mirror.db)",
      ],
      HELP_FLAG,
    ],
    exit: "0 after SIGTERM/SIGINT; 2 bad usage, or --port already in use",
    example: "syncmirror simulate --port 8080 --docs 1000",
  },
  init: {
    summary: "write a minimal working config file; never overwrites one",
    usage: "syncmirror init [--simulator URL] [--config FILE]",
    flags: [
      [
        "--simulator URL",
        "ask the simulator at URL (its root or its base_url) for base_url and a sync config id, with the token in $SYNCMIRROR_API_TOKEN (default: write placeholders that check names)",
      ],
      ["--config FILE", "the file to write (default: $SYNCMIRROR_CONFIG, then config/syncmirror.yaml)"],
      HELP_FLAG,
    ],
    exit: "0 written; 1 the file exists (nothing is written); 2 bad usage, a path that cannot take the file (a directory, below a file, not writable), or the simulator could not be asked",
    example: "syncmirror init --simulator http://127.0.0.1:8080 --config my.yaml",
  },
  changes: {
    summary: "the change feed as JSON (the same shape as GET /v1/changes), from a saved seq",
    usage:
      "syncmirror changes [--after SEQ] [--limit N] [--mirror NAME] [--wait SECONDS | --follow] [--config FILE]",
    flags: [
      ["--after SEQ", "the last seq already processed (default: 0, from the start)"],
      ["--limit N", "changes per page, 1 or more, at most 1000 served (default: 100)"],
      ["--mirror NAME", "only changes recorded by, or keys visible through, this mirror (default: all)"],
      [
        "--wait SECONDS",
        "when nothing is new, wait for a change to commit, up to 60 s (more is 60), as GET /v1/changes?wait= does (default: 0)",
      ],
      ["--follow", "keep printing pages as new changes commit, until stopped (default: one page)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0; 1 the database does not answer; 2 bad usage or config",
    example: "syncmirror changes --after 1200 --limit 500",
  },
  search: {
    summary: "full-text search over what one user may see (search.enabled: true)",
    usage: "syncmirror search --user EMAIL [--mirror NAME] [--limit N] [--json] [--config FILE] QUERY",
    flags: [
      ["--user EMAIL", "search as this user: only their live resources (required)"],
      ["--mirror NAME", "only through this mirror (default: every mirror)"],
      ["--limit N", "results, 1 or more, at most 100 served (default: 20)"],
      ["--q QUERY", "the query, as GET /v1/search names it (instead of QUERY after the options)"],
      ["--json", "print the JSON object GET /v1/search serves (default: text)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 (no results included); 1 the database does not answer (--json: a JSON error document); 2 bad usage or config, a query syntax error, search disabled",
    example: 'syncmirror search --user ana@example.com "release notes"',
  },
  reindex: {
    summary:
      "build or rebuild the search index from the mirror (SQLite: stop the daemon first; PostgreSQL: readers and writers carry on meanwhile)",
    usage: "syncmirror reindex [--mirror NAME]... [--config FILE]",
    flags: [
      [
        "--mirror NAME",
        "a mirror whose keys to index; repeat for several. The index serves every mirror, so it is rebuilt whole (default: every mirror)",
      ],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0; 1 the database is in use (SQLite) or the connection to it was lost (run it again); 2 bad usage or config, search disabled",
    example: "syncmirror reindex --config /config/syncmirror.yaml",
  },
  plan: {
    summary: "compare the sync configs declared in the file with the service; changes nothing",
    usage: "syncmirror plan [--json] [--config FILE]",
    flags: [
      ["--json", "print one JSON object for scripts, also when no plan could be made (default: a diff)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 nothing to change; 3 changes pending; 1 problems (a config to adopt, a config two mirrors share, the API unreachable); 2 bad usage or config (an unknown or ambiguous server or project)",
    example: "syncmirror plan --json",
  },
  apply: {
    summary: "make the service match the sync configs declared in the file, between passes",
    usage: "syncmirror apply [--adopt] [--prune] [--config FILE]",
    flags: [
      ["--adopt", "take over a config of the declared name that syncmirror did not create (default: refuse)"],
      [
        "--prune",
        "delete configs syncmirror created that no mirror declares any more; release adopted ones (default: keep)",
      ],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 done; 1 problems (a mirror refused: pass in flight, name taken, the service's 400); 2 bad usage or config",
    example: "syncmirror apply --adopt",
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
    exit: "0 copied; 1 the target is not empty (nothing copied), the SQLite mirror is in use, or a database error; 2 bad usage, a config without database.url_env, a target database that refuses the URL (does not exist, wrong password), no SQLite mirror at --from (no file, a directory, an empty file, or a file that is not a syncmirror SQLite database; it is left as it was)",
    example:
      "SYNCMIRROR_DATABASE_URL=postgres://... syncmirror copy-store --from /data/mirror.db --config pg.yaml",
  },
  pause: {
    summary: "skip a mirror's scheduled passes on every replica until resume (a running pass finishes)",
    usage: "syncmirror pause --mirror NAME [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "the mirror to pause (required)"],
      ["--json", "print the JSON object POST /v1/mirrors/{name}/pause answers (default: one line)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 (also when already paused); 1 the database does not answer (--json: a JSON error document); 2 bad usage or config, an unknown mirror",
    example: "syncmirror pause --mirror eng-wiki",
  },
  resume: {
    summary: "run a paused mirror's scheduled passes again, from its next scheduled time",
    usage: "syncmirror resume --mirror NAME [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "the mirror to resume (required)"],
      ["--json", "print the JSON object POST /v1/mirrors/{name}/resume answers (default: one line)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 (also when not paused); 1 the database does not answer (--json: a JSON error document); 2 bad usage or config, an unknown mirror",
    example: "syncmirror resume --mirror eng-wiki",
  },
  trigger: {
    summary: "make a pass due now: the first free replica runs it, or this process when no daemon is alive",
    usage: "syncmirror trigger --mirror NAME [--full] [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "the mirror (required); a paused mirror's requested pass runs too"],
      ["--full", "a full pass, with its sweep (default: incremental)"],
      [
        "--json",
        "print the JSON object POST /v1/mirrors/{name}/trigger answers, with the pass's summary when this process ran it (default: text)",
      ],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 once the pass is due (when this process ran it, its outcome is printed: use sync for an exit code that follows it); 1 the database does not answer (--json: a JSON error document); 2 bad usage or config, an unknown mirror, or no token to run the pass here (nothing is recorded)",
    example: "syncmirror trigger --mirror eng-wiki --full",
  },
  history: {
    summary: "past passes, newest first, each with every error it met (the same JSON as GET /v1/passes)",
    usage: "syncmirror history [--mirror NAME] [--limit N] [--before ID|TIME] [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "only this mirror's passes (default: every mirror)"],
      ["--limit N", "passes per page, 1 or more, at most 500 served (default: 20)"],
      [
        "--before ID|TIME",
        "the page of passes older than pass ID (a reply's next_before), or started before TIME (ISO 8601, e.g. a pass's started_at); default: the newest",
      ],
      ["--json", "print the JSON object GET /v1/passes serves (default: text)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0; 1 the database does not answer (--json: a JSON error document); 2 bad usage or config",
    example: "syncmirror history --mirror eng-wiki --limit 5",
  },
  problems: {
    summary:
      "open problems: rejected rows, failed or incomplete sources, skipped pairs, held sweeps, declared sync configs an apply failed on",
    usage: "syncmirror problems [--mirror NAME] [--limit N] [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "only this mirror's problems (default: every mirror)"],
      [
        "--limit N",
        "problems listed, 1 or more, at most 10000 served (default: 1000; the counts cover them all)",
      ],
      ["--json", "print the JSON object GET /v1/problems serves (default: text)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0; 1 the database does not answer (--json: a JSON error document); 2 bad usage or config",
    example: "syncmirror problems --json",
  },
  "approve-sweep": {
    summary: "let the next full pass apply the revocations the mass-delete guard held (once, any replica)",
    usage: "syncmirror approve-sweep --mirror NAME [--json] [--config FILE]",
    flags: [
      ["--mirror NAME", "the mirror whose held sweep to approve (required)"],
      ["--json", "print the JSON object POST /v1/mirrors/NAME/approve-sweep answers (default: text)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 approved; 1 nothing held (nothing is approved); 2 bad usage or config, unknown mirror",
    example: "syncmirror approve-sweep --mirror eng-wiki",
  },
  forget: {
    summary:
      "revoke all access a mirror removed from the config still grants, then delete its state (its history stays)",
    usage: "syncmirror forget --mirror NAME [--json] [--config FILE]",
    flags: [
      [
        "--mirror NAME",
        "the retired mirror (required): one the database knows that the config no longer names (status lists them)",
      ],
      ["--json", "print what was revoked as one JSON object (default: one line)"],
      CONFIG_FLAG,
      HELP_FLAG,
    ],
    exit: "0 forgotten; 1 another process holds the mirror's lease (nothing is revoked), the database does not answer (--json: a JSON error document); 2 bad usage or config, a mirror still in the config, or one the database does not know",
    example: "syncmirror forget --mirror old-wiki",
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

/** How the help writes `option` with its value ("--mirror NAME"), when the command takes one. */
export function flagUsage(name: CommandName, option: string): string | undefined {
  return HELP[name].flags.map(([flag]) => flag).find((flag) => flag.startsWith(`${option} `));
}

/** The usage line and where the rest is, for the end of a usage error's one line. */
export function usageHint(name: CommandName): string {
  return `(usage: ${HELP[name].usage}; syncmirror ${name} --help lists every option)`;
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
