/**
 * What a search index's operator must never see (either dialect): `GET /v1/search` on a running
 * daemon and `syncmirror search` returning a document the named user cannot see. Two mirrors
 * over overlapping users; then every way access ends (a full sweep, a user who left, a pair past
 * its grace, a deleted document), each checked with and without `mirror=`.
 */
import { describe, expect, it } from "vitest";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import type { DaemonProcess } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, editConfig, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];
const WORD = "zephyrine";

/** Keys `user` finds for WORD over HTTP, sorted; `mirror` adds `mirror=`. */
async function httpKeys(d: DaemonProcess, user: string, mirror?: string): Promise<string[]> {
  const scope = mirror === undefined ? "" : `&mirror=${mirror}`;
  const res = await fetch(`http://127.0.0.1:${d.port}/v1/search?user=${user}&q=${WORD}${scope}`, {
    headers: { authorization: `Bearer ${HTTP_TOKEN}` },
  });
  expect(res.status, `${user} ${mirror}`).toBe(200);
  const body = (await res.json()) as { results: { key: string }[] };
  return body.results.map((r) => r.key).sort();
}

/** Keys `user` finds for WORD through `syncmirror search --json`, sorted. */
async function cliKeys(h: Harness, user: string, mirror?: string): Promise<string[]> {
  const scope = mirror === undefined ? [] : ["--mirror", mirror];
  const r = await h.cli(["search", "--user", user, ...scope, "--json", WORD]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { results: { key: string }[] }).results.map((x) => x.key).sort();
}

/** What each (user, mirror filter) finds, over HTTP and the CLI alike (the two must agree). */
async function findings(h: Harness): Promise<Record<string, string[]>> {
  setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
  const d = await suite.daemon(h);
  const found: Record<string, string[]> = {};
  try {
    for (const user of [U1, U2, U3, "stranger@example.com"])
      for (const mirror of [undefined, "main", "other"]) {
        const label = `${user.split("@")[0]} ${mirror ?? "*"}`;
        found[label] = await httpKeys(d, user, mirror);
        expect(await cliKeys(h, user, mirror), label).toEqual(found[label]);
      }
  } finally {
    await d.stop("SIGTERM");
  }
  return found;
}

/**
 * What `findings` must hold: each user's keys whatever the mirror filter, user1 excepted under
 * `other` (not one of its users), and nothing for a stranger.
 */
function view(user1: string[], user2: string[], user3: string[]): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const [user, keys] of Object.entries({ user1, user2, user3, stranger: [] }))
    for (const mirror of ["*", "main", "other"])
      found[`${user} ${mirror}`] = user === "user1" && mirror === "other" ? [] : keys;
  return found;
}

describe("search never returns what the user cannot see", () => {
  // Three rounds of 12 CLI searches beside a daemon: about 30-50 s on a quiet 2-core machine, over the
  // suite's 60 s hang guard when the machine is loaded. A longer guard, not a speed expectation.
  it("through revocation by a sweep, a user who left, a grace that ran out and a delete, per mirror and across them", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 10 } }));
    configureConsumers(h, { search: true });
    const otherConfig = h.sim.configs.create({ name: "other", userEmails: [U2, U3] });
    editConfig(h, (config) => {
      (config.mirrors as unknown[]).push({ name: "other", sync_config_id: otherConfig });
    });
    const serverOf = (type: string) =>
      h.sim.servers.find((s) => s.source_type === type)?.server_instance_id as string;
    const add = (type: string, visibleTo: string[], title: string) => {
      const docId = h.sim.docs.add({
        server_instance_id: serverOf(type),
        visibleTo,
        title: `${title} ${WORD}`,
        content: `The ${WORD} plan.`,
      });
      return { docId, key: h.sim.docs.get(docId).key };
    };
    const shared = add("github", [U1, U2], "Shared");
    const graced = add("notion", [U1], "Graced");
    const left = add("github", [U3], "Leaver's");
    const deleted = add("github", [U2], "Deleted");
    const fullPass = async () => {
      for (const mirror of ["main", "other"]) {
        const summary = await h.sync({ mirror, full: true });
        expect(summary.outcome, `${mirror}: ${summary.message}`).toBe("succeeded");
      }
    };
    await fullPass();

    expect(await findings(h)).toEqual(
      view([shared.key, graced.key].sort(), [shared.key, deleted.key].sort(), [left.key]),
    );

    h.sim.clock.advance(60_000);
    h.sim.docs.setVisibility(shared.docId, [U2]);
    h.sim.people.leaveProject(U3);
    h.sim.docs.remove(deleted.docId);
    h.sim.people.setAuth(U1, serverOf("notion"), "not_authenticated");
    await fullPass();
    // Within the grace U1 keeps what the unreachable server showed them; past it, not.
    expect((await findings(h))["user1 *"]).toEqual([graced.key]);
    h.sim.clock.advance(73 * 3_600_000);
    await fullPass();

    expect(await findings(h)).toEqual(view([], [shared.key], []));
  }, 180_000);
});
