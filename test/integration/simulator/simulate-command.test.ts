import { once } from "node:events";
import { readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CommandIo } from "../../../src/commands/command.js";
import { simulate } from "../../../src/commands/simulate.js";
import type { Body } from "../../helpers/simulator.js";

function testIo() {
  const controller = new AbortController();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (chunk) => {
    out += String(chunk);
  });
  stderr.on("data", (chunk) => {
    err += String(chunk);
  });
  const io: CommandIo = { stdout, stderr, env: {}, signal: controller.signal, isTty: false };
  return { io, controller, stdout, out: () => out, err: () => err };
}

describe("syncmirror simulate", () => {
  it("prints the base URL, token and a curl line, serves until aborted, then exits 0", async () => {
    const { io, controller, stdout, out } = testIo();
    const exit = simulate(["--seed", "3", "--users", "2", "--docs", "40"], io);
    while (!out().includes("try: curl")) await once(stdout, "data");
    const baseUrl = /base_url: (\S+)/.exec(out())?.[1] ?? "";
    const token = /token: (\S+)/.exec(out())?.[1] ?? "";
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    expect(out()).toContain(`curl -H "Authorization: Bearer ${token}" ${baseUrl}/projects`);
    const projects = await fetch(`${baseUrl}/projects`, { headers: { authorization: `Bearer ${token}` } });
    expect(projects.status).toBe(200);
    const access = await fetch(`${baseUrl}/sync-configs/${/sync_config_id: (\S+)/.exec(out())?.[1]}/access`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(((await access.json()) as Body).items).toHaveLength(2);
    controller.abort();
    expect(await exit).toBe(0);
    await expect(fetch(`${baseUrl}/projects`)).rejects.toThrow();
  });

  it("lists every /_sim admin route in its banner, as docs/reference/cli.md does", async () => {
    const { io, controller, stdout, out } = testIo();
    const exit = simulate([], io);
    while (!out().includes("try: curl")) await once(stdout, "data");
    const banner = out().slice(out().indexOf("admin: "), out().indexOf("try: curl"));
    // "GET|DELETE /requests" names two routes.
    const listed = [...banner.matchAll(/\b([A-Z]+(?:\|[A-Z]+)*) (\/[\w/-]+)/g)].flatMap(([, methods, path]) =>
      (methods ?? "").split("|").map((method) => `${method} ${path}`),
    );
    const docs = readFileSync("docs/reference/cli.md", "utf8");
    const documented = docs.slice(docs.indexOf("## `simulate` admin routes"));
    for (const route of [
      "POST /docs/edit-random",
      "POST /docs/remove-random",
      "POST /outcomes",
      "POST /faults",
      "GET /faults",
      "DELETE /faults",
      "POST /premium",
      "POST /cannot-start",
      "GET /requests",
      "DELETE /requests",
    ]) {
      expect(listed).toContain(route);
      expect(documented, route).toContain(`\`${route.replace(" /", " /_sim/")}`);
    }
    controller.abort();
    expect(await exit).toBe(0);
  });

  it("follows the wall clock so runs get current created_at times", async () => {
    const { io, controller, stdout, out } = testIo();
    const exit = simulate([], io);
    while (!out().includes("try: curl")) await once(stdout, "data");
    const baseUrl = /base_url: (\S+)/.exec(out())?.[1] ?? "";
    const headers = {
      authorization: `Bearer ${/token: (\S+)/.exec(out())?.[1]}`,
      "content-type": "application/json",
    };
    const configId = /sync_config_id: (\S+)/.exec(out())?.[1];
    const before = Date.now();
    const response = await fetch(`${baseUrl}/sync-task`, {
      method: "POST",
      headers,
      body: JSON.stringify({ sync_config_id: configId }),
    });
    const { runs } = (await response.json()) as Body;
    const run = (await (await fetch(`${baseUrl}/sync-task/${runs[0].sync_id}`, { headers })).json()) as Body;
    expect(Date.parse(run.created_at)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    controller.abort();
    expect(await exit).toBe(0);
  });

  it("takes --servers TYPE=N,... for the servers per source type", async () => {
    const { io, controller, stdout, out } = testIo();
    const exit = simulate(["--servers", "notion=2,google_docs=1"], io);
    while (!out().includes("try: curl")) await once(stdout, "data");
    expect(out()).toContain("servers: 3");
    const baseUrl = /base_url: (\S+)/.exec(out())?.[1] ?? "";
    const headers = { authorization: `Bearer ${/token: (\S+)/.exec(out())?.[1]}` };
    const projects = (await (await fetch(`${baseUrl}/projects`, { headers })).json()) as Body;
    const sources = await fetch(`${baseUrl}/sync-configs/sources?project_id=${projects[0].id}`, { headers });
    const types = ((await sources.json()) as Body).sources.map((s: { source_type: string }) => s.source_type);
    expect(types).toEqual(["notion", "notion", "google_docs"]);
    controller.abort();
    expect(await exit).toBe(0);
  });

  it("takes --latency-ms N and delays each API answer by it", async () => {
    const { io, controller, stdout, out } = testIo();
    const exit = simulate(["--latency-ms", "150"], io);
    while (!out().includes("try: curl")) await once(stdout, "data");
    expect(out()).toContain("latency: 150 ms");
    const baseUrl = /base_url: (\S+)/.exec(out())?.[1] ?? "";
    const headers = { authorization: `Bearer ${/token: (\S+)/.exec(out())?.[1]}` };
    const started = performance.now();
    expect((await fetch(`${baseUrl}/projects`, { headers })).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(149);
    controller.abort();
    expect(await exit).toBe(0);
  });

  it("refuses bad arguments with exit 2 and usage on stderr", async () => {
    for (const args of [
      ["--docs", "many"],
      ["--port", "70000"],
      ["--bogus"],
      ["--users", "0"],
      ["--servers", "dropbox=1"],
      ["--servers", "notion=0"],
      ["--latency-ms", "-5"],
    ]) {
      const { io, err } = testIo();
      expect(await simulate(args, io)).toBe(2);
      expect(err()).toMatch(/usage: syncmirror simulate/);
    }
  });
});
