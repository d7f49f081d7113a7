/**
 * `syncmirror demo`: starts the bundled simulated service on loopback, mirrors a sample
 * workspace into a temporary database and prints what happened: a full pass, an edit picked up
 * by an incremental pass, a deletion found by the next full pass.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { silentLogger } from "../log.js";
import { createRuntime } from "../runtime.js";
import { type Simulator, startSimulator } from "../simulator/index.js";
import type { Store } from "../store/store.js";
import type { MirrorSummary } from "../sync/summary.js";
import { syncMirror } from "../sync/sync-mirror.js";
import { bindMirror } from "../sync-configs/bind.js";
import type { Command, CommandIo } from "./command.js";
import { parseCommandArgs, withErrors } from "./common.js";
import { formatTable } from "./sync.js";

const TOKEN_ENV = "SYNCMIRROR_DEMO_TOKEN";

export const demo: Command = (args, io) =>
  withErrors(io, async () => {
    const { values } = parseCommandArgs("demo", args, { keep: { type: "boolean", default: false } });
    const out = (line: string) => io.stdout.write(`${line}\n`);
    // Everything it starts is released whatever fails: a simulator left listening kept the process alive.
    const dir = createDemoDirectory();
    try {
      const sim = await startSimulator({
        seed: 7,
        users: 3,
        docs: 60,
        serversPerType: { notion: 1, github: 1 },
      });
      try {
        return await runDemo(sim, dir, io, out);
      } finally {
        await sim.close();
      }
    } finally {
      if (values.keep) out(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    }
  });

/** A directory of its own under $TMPDIR; one that cannot be made is the environment's to fix (exit 2, nothing started). */
function createDemoDirectory(): string {
  const base = tmpdir();
  try {
    return mkdtempSync(join(base, "syncmirror-demo-"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(
      `cannot create a temporary directory in ${base} (${code}): set TMPDIR to a directory this user can write`,
      { cause: error },
    );
  }
}

/** The four passes and the search, against `sim`, in `dir`. */
async function runDemo(
  sim: Simulator,
  dir: string,
  io: CommandIo,
  out: (line: string) => void,
): Promise<number> {
  const configPath = join(dir, "syncmirror.yaml");
  writeFileSync(
    configPath,
    [
      "api:",
      `  base_url: ${sim.baseUrl}`,
      `  token_env: ${TOKEN_ENV}`,
      "database:",
      `  path: ${join(dir, "mirror.db")}`,
      "defaults:",
      "  poll_initial_seconds: 0.05",
      "  poll_max_seconds: 0.2",
      "search:",
      "  enabled: true",
      "mirrors:",
      "  - name: demo",
      `    sync_config_id: ${sim.syncConfigId}`,
      "",
    ].join("\n"),
  );
  const env = { ...io.env, [TOKEN_ENV]: sim.token };
  const config = loadConfig(configPath, env);
  const [configured] = config.mirrors;
  if (!configured) throw new Error("demo config has no mirror");
  const runtime = await createRuntime(
    config,
    { ...io, env },
    { lock: true, retriedBy: "next pass", log: silentLogger() },
  );
  const mirror = await bindMirror(configured, runtime.store);
  const pass = async (title: string, full: boolean): Promise<MirrorSummary> => {
    io.signal.throwIfAborted();
    const summary = await syncMirror(mirror, runtime.syncContext(io.signal), {
      full,
      allowMassDelete: false,
      dryRun: false,
    });
    out(`\n== ${title}`);
    io.stdout.write(formatTable([summary]));
    return summary;
  };
  try {
    out(
      `simulated service at ${sim.baseUrl}: ${sim.users.length} users, ${sim.servers.length} servers, ${sim.docs.list().length} documents`,
    );
    out(`mirror database: ${join(dir, "mirror.db")}`);
    await pass("1. first pass: no watermark yet, so a full snapshot", false);
    out(COLUMNS);
    const [edited, removed] = sim.docs.list().filter((d) => d.visibleTo.length > 0 && !d.deleted);
    sim.clock.advance(60_000);
    if (edited) {
      sim.docs.edit(edited.docId);
      out(`\nupstream: edited ${edited.key}`);
    }
    const incremental = await pass("2. incremental pass: since = oldest watermark minus the overlap", false);
    out(`  since sent: ${incremental.since ?? "none"}`);
    if (removed) {
      sim.docs.remove(removed.docId);
      out(`\nupstream: deleted ${removed.key}`);
    }
    await pass("3. incremental pass: exports never report deletions, so nothing is removed", false);
    await pass("4. full pass: the key is missing from the snapshot, so it is swept", true);
    out("  (deleted: the document is now a tombstone; revoked: its readers' access rows, removed)");
    const { store } = runtime;
    const contents = await store.countContents();
    out(`\nresources: ${contents.live} live, ${contents.tombstones} tombstone(s)`);
    const feed = Object.entries(contents.changes).sort(([a], [b]) => a.localeCompare(b));
    out(`changes feed: ${feed.map(([op, n]) => `${n} ${op}`).join(", ")}`);
    out(FEED);
    await searchAsTwoUsers(store, sim, out);
    return 0;
  } finally {
    await runtime.close();
  }
}

/**
 * The same query as two users: a word from the title of a document only the first can see, so the
 * two result lists differ by exactly what access allows.
 */
async function searchAsTwoUsers(store: Store, sim: Simulator, out: (line: string) => void): Promise<void> {
  const live = sim.docs.list().filter((d) => !d.deleted);
  const privateDoc = live.find((d) => d.visibleTo.length === 1);
  const owner = privateDoc?.visibleTo[0];
  const other = sim.users.find((u) => u !== owner);
  const words = privateDoc?.title.match(/\p{L}+/gu);
  if (!owner || !other || !words) return;
  // A phrase query on the title: the private document ranks first for its owner only.
  const query = `"${words.join(" ")}"`;
  out(`\n== 5. search ${query} (search.enabled: true), as two users`);
  for (const user of [owner, other]) {
    const hits = await store.search.query({ userEmail: user, query, limit: 3 });
    out(`${user}: ${hits.length === 0 ? "no results" : `${hits.length} result(s)`}`);
    for (const h of hits)
      out(`  ${h.title ?? "(untitled)"}  ${h.key}\n    ${h.snippet.replace(/\s+/g, " ")}`);
    if (user === other)
      out(
        `  (the service shares ${JSON.stringify(privateDoc?.title)} with ${owner} only, and search returns only what the searching user may see, so ${other} does not find it)`,
      );
  }
}

const COLUMNS = [
  "  (rows: export rows read, one per user who sees a document; new / changed / unchanged: documents;",
  "   deleted: documents nobody may see any more; revoked: a user's access to a document removed;",
  "   held: documents whose revocation the mass-delete guard holds back until approved (none here);",
  "   skipped: user x server pairs the trigger did not run, e.g. the user cannot reach that server)",
].join("\n");

const FEED = [
  "  (one change per document per run that changed it: upsert = new or changed content, access = only",
  "   who may see it changed (here mostly each further user's run finding a document already stored),",
  "   delete = nobody may see it any more; a search index reads this feed: syncmirror changes --after SEQ)",
].join("\n");
