/**
 * `syncmirror problems [--mirror NAME] [--limit N] [--json]`: open problems (rejected rows, failed
 * or incomplete sources, skipped pairs, held sweeps, declared sync configs not applied); `--json`
 * prints what `GET /v1/problems` serves. Takes no lock, so it works beside a running daemon.
 */
import { formatProblems } from "../console/format.js";
import { parseProblemParams } from "../console/params.js";
import { buildProblems } from "../console/problems.js";
import type { Command } from "./command.js";
import { loadCommandConfig, parseCommandArgs, printFromStore, withErrors } from "./common.js";

export const problems: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("problems", args, {
      mirror: { type: "string" },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
    });
    const config = loadCommandConfig(values.config, io);
    const mirrors = config.mirrors.map((m) => m.name);
    const params = parseProblemParams({ mirror: values.mirror, limit: values.limit }, mirrors, {
      mirror: "--mirror",
      limit: "--limit",
    });
    await printFromStore(
      io,
      config,
      values.json ?? false,
      (store) => buildProblems(store, mirrors, params),
      formatProblems,
    );
    return 0;
  });
