/**
 * `syncmirror history [--mirror NAME] [--limit N] [--before ID] [--json]`: past passes, newest
 * first, each with every error it met; `--json` prints what `GET /v1/passes` serves. Takes no
 * lock, so it works beside a running daemon.
 */
import { formatHistory } from "../console/format.js";
import { buildHistory } from "../console/history.js";
import { parseHistoryParams } from "../console/params.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, printFromStore, withErrors } from "./common.js";

export const history: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("history", args, {
      mirror: { type: "string" },
      limit: { type: "string" },
      before: { type: "string" },
      json: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    const mirrors = config.mirrors.map((m) => m.name);
    const params = parseHistoryParams(
      { mirror: values.mirror, limit: values.limit, before: values.before },
      mirrors,
      { mirror: "--mirror", limit: "--limit", before: "--before" },
    );
    const next = (before: number) =>
      [
        "syncmirror history",
        params.mirror && `--mirror ${params.mirror}`,
        values.limit && `--limit ${params.limit}`,
        `--before ${before}`,
        values.config && `--config ${shellWord(values.config)}`,
      ]
        .filter((part) => part)
        .join(" ");
    await printFromStore(
      io,
      config,
      values.json ?? false,
      (store) => buildHistory(store, mirrors, params),
      (page) => formatHistory(page, next),
    );
    return 0;
  });

/** A path as one shell word: as is when plain, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
