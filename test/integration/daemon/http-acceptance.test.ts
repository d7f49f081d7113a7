/**
 * The HTTP contract as an outside caller of `syncmirror run` meets it: the `/v1/` JSON equals what
 * the CLI prints with `--json`, HEAD answers as GET without a body, the history pages with
 * `before` to the end, the controls refuse what they cannot act on, nothing the daemon logs at
 * trace level carries the token, and a stop is not held up by clients that are slow or waiting.
 */
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { callDaemon, type DaemonProcess, type DaemonReply, until } from "../../helpers/daemon.js";
import { lastSeq } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "./setup.js";

const suite = daemonSuite();
const U1 = "user1@example.com";

type Got = DaemonReply;

/** A request with the bearer token (`token`: another one, or null for none). */
function call(
  d: DaemonProcess,
  path: string,
  init: { token?: string | null; method?: string; body?: string } = {},
): Promise<Got> {
  const token = init.token === undefined ? HTTP_TOKEN : init.token;
  return callDaemon(d, path, { ...init, authorization: token === null ? undefined : `Bearer ${token}` });
}

/** Mirrored once in-process, consumers on, a daemon that syncs only when asked. */
async function served(env: Record<string, string> = {}): Promise<{ h: Harness; d: DaemonProcess }> {
  const h = suite.use(await createHarness({ sim: { docs: 20 } }));
  configureConsumers(h, { search: true });
  await h.sync();
  setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
  return { h, d: await suite.daemon(h, { env }) };
}

async function cliJson(h: Harness, args: string[]): Promise<unknown> {
  const out = await h.cli(args);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

interface PassEntry {
  id: number;
  mode: string;
  since: string | null;
  started_at: string;
  ended_at: string | null;
}

/** Asks for a pass over HTTP and waits until the history shows it ended: its entry. */
async function passOver(d: DaemonProcess, mode: "full" | "incremental"): Promise<PassEntry> {
  const before = (await call(d, "/v1/passes?limit=1")).json.passes[0]?.id ?? 0;
  const res = await call(d, "/v1/mirrors/main/trigger", { method: "POST", body: JSON.stringify({ mode }) });
  expect(res.status, res.text).toBe(200);
  return until(async () => {
    const newest: PassEntry | undefined = (await call(d, "/v1/passes?limit=1")).json.passes[0];
    return newest && newest.id > before && newest.ended_at !== null ? newest : undefined;
  }, `the ${mode} pass to end`);
}

describe("/v1 JSON is the CLI's --json", () => {
  it("for changes, search, history, problems and status", async () => {
    const { h, d } = await served();
    await passOver(d, "full");
    const pairs: [string, string[]][] = [
      ["/v1/changes?after=1&limit=4", ["changes", "--after", "1", "--limit", "4"]],
      ["/v1/changes?after=0&limit=5000&mirror=main", ["changes", "--limit", "5000", "--mirror", "main"]],
      [`/v1/search?user=${U1}&q=the&limit=3`, ["search", "--json", "--user", U1, "--limit", "3", "the"]],
      ["/v1/passes", ["history", "--json"]],
      ["/v1/passes?limit=1&mirror=main", ["history", "--json", "--limit", "1", "--mirror", "main"]],
      ["/v1/problems", ["problems", "--json"]],
    ];
    for (const [path, args] of pairs) {
      const http = await call(d, path);
      expect(http.status, `${path}: ${http.text}`).toBe(200);
      expect(await cliJson(h, args), path).toEqual(http.json);
    }
    const status = await call(d, "/status");
    const cli = (await cliJson(h, ["status", "--json"])) as typeof status.json;
    // Only the heartbeat's time moves between the two reads.
    const withoutBeats = (s: typeof status.json) =>
      JSON.stringify(s).replace(/"last_seen_at":"[^"]*"/g, '"last_seen_at":""');
    expect(withoutBeats(cli)).toEqual(withoutBeats(status.json));
  });
});

describe("HEAD", () => {
  it("answers as GET, with the same status and headers and no body", async () => {
    const { d } = await served();
    const paths = [
      "/healthz",
      "/readyz",
      "/status",
      "/v1/changes?after=0&limit=3",
      "/v1/passes",
      "/v1/problems",
      `/v1/search?user=${U1}&q=the`,
      "/v1/nowhere",
      "/nowhere",
      "/v1/changes?after=x",
      "/v1/mirrors/main/pause",
    ];
    for (const path of paths) {
      const get = await call(d, path);
      const head = await call(d, path, { method: "HEAD" });
      expect(head.status, path).toBe(get.status);
      expect(head.text, path).toBe("");
      expect(head.headers.get("content-type"), path).toBe(get.headers.get("content-type"));
      expect(head.headers.get("content-length"), path).toBe(String(Buffer.byteLength(get.text)));
    }
  });
});

describe("/v1/passes paging", () => {
  it("reads every pass once, newest first, by following next_before", async () => {
    const { h, d } = await served();
    await passOver(d, "incremental");
    await passOver(d, "full");
    await passOver(d, "incremental");
    const all = (await call(d, "/v1/passes?limit=500")).json.passes;
    expect(all.length).toBeGreaterThanOrEqual(4);
    const paged: unknown[] = [];
    let before = "";
    for (;;) {
      const page = await call(d, `/v1/passes?limit=1${before}`);
      expect(page.status, page.text).toBe(200);
      paged.push(...page.json.passes);
      if (page.json.next_before === null) break;
      before = `&before=${page.json.next_before}`;
    }
    expect(paged).toEqual(all);
    const ids = all.map((p: { id: number }) => p.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    // A time: the passes that started before it.
    const second = all[1] as { started_at: string };
    const byTime = await call(d, `/v1/passes?before=${encodeURIComponent(second.started_at)}`);
    expect(byTime.json.passes).toEqual(all.slice(2));
    expect(await cliJson(h, ["history", "--json", "--limit", "1", "--before", String(ids[0])])).toEqual(
      (await call(d, `/v1/passes?limit=1&before=${ids[0]}`)).json,
    );
  });
});

describe("the controls", () => {
  it("refuse an unknown mirror, another method and a body that is not JSON; run a full pass when asked", async () => {
    const { d } = await served();
    for (const action of ["pause", "resume", "trigger", "approve-sweep"]) {
      const unknown = await call(d, `/v1/mirrors/nope/${action}`, { method: "POST" });
      expect(unknown.status, action).toBe(404);
      expect(unknown.json.error.code).toBe("NOT_FOUND");
      expect(unknown.json.error.message).toContain("main");
      for (const method of ["GET", "PUT", "DELETE"]) {
        const wrong = await call(d, `/v1/mirrors/main/${action}`, { method });
        expect(wrong.status, `${method} ${action}`).toBe(405);
        expect(wrong.headers.get("allow")).toBe("POST");
      }
      const noToken = await call(d, `/v1/mirrors/main/${action}`, { method: "POST", token: null });
      expect(noToken.status, action).toBe(401);
    }
    const passesBefore = (await call(d, "/v1/passes")).json;
    for (const body of ["{bad", "[1", '{"mode":"sometimes"}']) {
      const bad = await call(d, "/v1/mirrors/main/trigger", { method: "POST", body });
      expect(bad.status, body).toBe(400);
      expect(bad.json.error).toEqual({ code: "USAGE", message: expect.stringMatching(/^body: /) });
    }
    const badPause = await call(d, "/v1/mirrors/main/pause", { method: "POST", body: "{bad" });
    expect(badPause.status).toBe(400);
    expect((await call(d, "/status")).json.mirrors[0].paused).toBe(false);
    expect((await call(d, "/v1/passes")).json).toEqual(passesBefore);

    const pass = await passOver(d, "full");
    expect(pass.mode).toBe("full");
    expect(pass.since).toBeNull();
  });
});

describe("what the daemon logs", () => {
  it("never carries the token, the right one or a wrong one, even at trace level", async () => {
    const wrong = "wrong-token-7c1d0e";
    const { d } = await served({ LOG_LEVEL: "trace" });
    for (const token of [HTTP_TOKEN, wrong, null]) {
      await call(d, "/status", { token });
      await call(d, "/v1/changes?after=0&limit=2", { token });
      await call(d, "/v1/mirrors/main/pause", { token, method: "POST" });
      await call(d, "/v1/mirrors/main/resume", { token, method: "POST" });
      await call(d, "/v1/nowhere", { token });
    }
    await passOver(d, "incremental");
    const stopped = await d.stop("SIGTERM");
    expect(stopped.code).toBe(0);
    expect(d.logs().some((l) => (l.level as number) <= 20)).toBe(true);
    for (const secret of [HTTP_TOKEN, wrong]) {
      expect(d.stderr()).not.toContain(secret);
      expect(d.stdout()).not.toContain(secret);
    }
  });
});

/** A socket that sent `request` and reads nothing more. */
function stalled(port: number, request: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(request, () => resolve(socket));
    });
    socket.on("error", () => {});
    socket.once("error", reject);
  });
}

describe("stopping with clients in the middle", () => {
  it("answers a pending long poll and exits 0, not held by a half-sent request or a client that reads nothing", async () => {
    const { h, d } = await served();
    const poll = call(d, `/v1/changes?after=${lastSeq(h)}&wait=60`);
    const sockets = [
      await stalled(d.port, "GET /v1/changes HTTP/1.1\r\nHost: x\r\nAuthoriz"),
      await stalled(
        d.port,
        `POST /v1/mirrors/main/trigger HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${HTTP_TOKEN}\r\nContent-Length: 40\r\n\r\n{"mo`,
      ),
      await stalled(
        d.port,
        `GET /v1/changes?after=0&limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${HTTP_TOKEN}\r\n\r\n`,
      ),
    ];
    for (const s of sockets) s.pause();
    // The poll is in the daemon's hands once a probe on another connection has been answered.
    expect((await call(d, "/healthz")).status).toBe(200);
    const stopped = await d.stop("SIGTERM");
    for (const s of sockets) s.destroy();
    expect(stopped.code).toBe(0);
    expect(stopped.ms).toBeLessThan(10_000);
    const answered = await poll;
    expect(answered.status).toBe(200);
    expect(answered.json).toEqual({ changes: [], next_after: lastSeq(h), has_more: false });
  });

  it("logs no error when a client hangs up in the middle of a control's body", async () => {
    const { d } = await served();
    const socket = await stalled(
      d.port,
      `POST /v1/mirrors/main/trigger HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${HTTP_TOKEN}\r\nContent-Length: 40\r\n\r\n{"mo`,
    );
    expect((await call(d, "/healthz")).status).toBe(200);
    socket.destroy();
    // The daemon answers on after the hang-up; its log is read once it stopped.
    expect((await call(d, "/healthz")).status).toBe(200);
    expect((await d.stop("SIGTERM")).code).toBe(0);
    const errors = d.logs().filter((l) => (l.level as number) >= 50);
    expect(errors).toEqual([]);
  });
});
