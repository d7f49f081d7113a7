/**
 * `syncmirror status` at a terminal: the service's words in it (a skip reason) are shown with
 * their control characters as \xHH, never as escape sequences.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness | undefined;
let proxy: RewritingProxy | undefined;
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

describe("syncmirror status", () => {
  it("prints a skip reason the service gave with its control characters as \\xHH", async () => {
    proxy = await startRewritingProxy();
    h = await createHarness({ sim: { docs: 5 }, api: { base_url: proxy.baseUrl } });
    proxy.target = h.sim.baseUrl;
    const [user] = h.sim.users;
    const server = h.sim.servers[0];
    if (!user || !server) throw new Error("the simulator has no user or server");
    h.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
    proxy.trigger = (body) => body.replaceAll('"not_accessible"', '"gone\\u001b[2J\\u001b]0;owned\\u0007"');
    await h.sync();
    const r = await h.cli(["status"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `skipped: ${user} on ${server.server_instance_id}: gone\\x1b[2J\\x1b]0;owned\\x07`,
    );
    expect(r.stdout.replaceAll("\n", "")).not.toMatch(/\p{Cc}/u);
  });
});
