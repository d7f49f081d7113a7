/**
 * `/status` names users, so it needs the bearer token from `http.token_env` (or, without one, a
 * loopback listener); `/metrics`, `/healthz` and `/readyz` stay open and never carry an email.
 */
import { describe, expect, it } from "vitest";
import { parseMetrics, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, EVERY_SECOND, editConfig, NEVER } from "./setup.js";

const suite = daemonSuite();
const HTTP_TOKEN = "status-bearer-9f3e1c";

/** A harness whose daemon listens on every interface, with one pair skipped as not_accessible. */
async function exposedHarness(): Promise<Harness> {
  const h = suite.use(
    await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
  );
  editConfig(h, (config) => {
    config.http = { listen: "0.0.0.0:0" };
  });
  const [user] = h.sim.users;
  const notion = h.sim.servers.find((s) => s.source_type === "notion");
  if (!user || !notion) throw new Error("the simulator has no user or no notion server");
  h.sim.people.setAuth(user, notion.server_instance_id, "not_authenticated");
  return h;
}

describe("syncmirror run: who may read what over HTTP", () => {
  it("answers /status 401 on a non-loopback listener without a token; open endpoints carry no email", async () => {
    const h = await exposedHarness();
    const d = await suite.daemon(h);
    await until(
      async () =>
        (await d.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })) >= 1,
      "a succeeded pass",
    );
    const status = await d.get("/status");
    expect(status.status).toBe(401);
    expect(status.body).not.toContain("@");
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      const res = await d.get(path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).not.toContain("@");
    }
    expect(await d.metric("syncmirror_skipped_pairs", { mirror: "main", reason: "not_accessible" })).toBe(1);
    expect(d.logs().some((l) => String(l.msg).includes("/status answers 401"))).toBe(true);
    expect((await d.stop()).code).toBe(0);
  });

  it("serves /status only with the bearer token when one is set, and never logs it", async () => {
    const h = await exposedHarness();
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN, LOG_LEVEL: "debug" } });
    await until(
      async () =>
        (await d.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })) >= 1,
      "a succeeded pass",
    );
    const url = `http://127.0.0.1:${d.port}/status`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { Authorization: "Bearer nope" } })).status).toBe(401);
    const ok = await fetch(url, { headers: { Authorization: `Bearer ${HTTP_TOKEN}` } });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { mirrors: { skipped_pairs: { user_email: string }[] }[] };
    expect(body.mirrors[0]?.skipped_pairs.map((p) => p.user_email)).toEqual([h.sim.users[0]]);
    const metrics = parseMetrics((await d.get("/metrics")).body);
    expect(metrics.some((s) => Object.values(s.labels).some((v) => v.includes("@")))).toBe(false);
    expect((await d.stop()).code).toBe(0);
    expect(d.stderr()).not.toContain(HTTP_TOKEN);
    expect(d.stdout()).not.toContain(HTTP_TOKEN);
  });
});
