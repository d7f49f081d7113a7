/**
 * `syncmirror copy-store --from SQLITE_PATH`: copies a SQLite mirror into the PostgreSQL database
 * the config names (`database.url_env`), which must be empty. The copy itself is
 * `store/copy-store.ts`; this wires the config and reports.
 */
import { resolve } from "node:path";
import { UsageError } from "../errors.js";
import { copyStore as copy } from "../store/copy-store.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, withErrors } from "./common.js";
import { usageHint } from "./help.js";

export const copyStore: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("copy-store", args, { from: { type: "string" } });
    if (values.from === undefined || values.from === "")
      throw new UsageError(
        `--from SQLITE_PATH is required: the SQLite mirror to copy ${usageHint("copy-store")}`,
      );
    const config = loadCommandConfig(values.config, io);
    const from = resolve(values.from);
    const result = await copy({
      sqlitePath: from,
      config,
      signal: io.signal,
      onTable: (table, rows) => io.stdout.write(`${table}: ${rows} rows\n`),
    });
    const total = Object.values(result.rows).reduce((sum, n) => sum + n, 0);
    io.stdout.write(
      `copied ${from} into ${result.target}: ${total} rows; the change feed continues after seq ${result.lastSeq}. Run syncmirror with ${config.file} from now on (a pass left in flight resumes).\n`,
    );
    return 0;
  });
