import { MockAgent } from "undici";
import { describe, expect, it } from "vitest";
import { createApiClient } from "../../src/api/client.js";
import { createLogger, REDACT_CENSOR, silentLogger, withLogContext } from "../../src/log.js";

const TOKEN = "tok-5ecret-do-not-leak-8f2a";

/** A destination that keeps what pino writes. */
function capture(): { lines: string[]; stream: { write(msg: string): void } } {
  const lines: string[] = [];
  return { lines, stream: { write: (msg: string) => void lines.push(msg) } };
}

describe("createLogger", () => {
  it("writes JSON lines with the level, name and message", () => {
    const { lines, stream } = capture();
    createLogger({ level: "info", name: "syncmirror" }, stream).info({ mirror: "eng" }, "hello");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: 30,
      name: "syncmirror",
      mirror: "eng",
      msg: "hello",
    });
  });

  it("adds the enclosing withLogContext fields to every line, once, and only inside it", async () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: "info" }, stream);
    await withLogContext({ mirror: "eng" }, () =>
      withLogContext({ trigger_id: "t-1" }, async () => log.info({ mirror: "eng" }, "inside")),
    );
    log.info("outside");
    expect(lines[0]?.match(/"mirror"/g)).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ mirror: "eng", trigger_id: "t-1", msg: "inside" });
    expect(JSON.parse(lines[1] ?? "")).not.toHaveProperty("mirror");
  });

  it("writes one readable line per entry for a terminal, after redaction", () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: "info", name: "syncmirror", human: true }, stream);
    log.warn(
      { mirror: "eng", authorization: `Bearer ${TOKEN}`, err: new Error("boom now") },
      "api request failed",
    );
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line.startsWith("\r\u001b[K")).toBe(true);
    expect(line.slice(4)).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}api request failed mirror=eng authorization=\[redacted\] err="boom now"\n$/,
    );
    expect(line).not.toContain(TOKEN);
    expect(() => JSON.parse(line)).toThrow();
  });

  it("shows control characters of a readable line's message and fields as \\xHH: none reaches the terminal", () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: "info", human: true }, stream);
    log.warn({ reason: "a\u001b[2Jb", source: "x\u009b0m" }, "skipped \u001b]0;owned\u0007");
    const line = lines[0] ?? "";
    expect(line.slice(4)).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}skipped \\x1b\]0;owned\\x07 reason=a\\x1b\[2Jb source=x\\x9b0m\n$/,
    );
    expect(line.slice(4, -1)).not.toMatch(/\p{Cc}/u);
  });

  it("censors every path that may hold the token", () => {
    const { lines, stream } = capture();
    createLogger({ level: "debug" }, stream).info(
      {
        token: TOKEN,
        api: { token: TOKEN, base_url: "https://api.example.com/api/v1" },
        config: { api_token: TOKEN },
        client: { token: TOKEN, authorization: `Bearer ${TOKEN}` },
        authorization: `Bearer ${TOKEN}`,
        headers: { authorization: `Bearer ${TOKEN}` },
        req: { headers: { authorization: `Bearer ${TOKEN}` } },
      },
      "config loaded",
    );
    const text = lines.join("");
    expect(text).not.toContain(TOKEN);
    const line = JSON.parse(text);
    expect(line.token).toBe(REDACT_CENSOR);
    expect(line.api).toEqual({ token: REDACT_CENSOR, base_url: "https://api.example.com/api/v1" });
    expect(line.req.headers.authorization).toBe(REDACT_CENSOR);
  });

  it("respects the level", () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: "warn" }, stream);
    log.info("hidden");
    log.warn("shown");
    expect(lines).toHaveLength(1);
  });

  it("silentLogger writes nothing", () => {
    expect(silentLogger().level).toBe("silent");
  });
});

describe("the API client's logs and errors", () => {
  it("never contain the token, through retries and a final error", async () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: "trace" }, stream);
    const agent = new MockAgent();
    agent.disableNetConnect();
    const pool = agent.get("http://upstream.test");
    pool.intercept({ path: "/api/v1/projects" }).reply(503, `echo: Authorization: Bearer ${TOKEN}`);
    pool
      .intercept({ path: "/api/v1/projects" })
      .replyWithError(Object.assign(new Error("reset"), { code: "ECONNRESET" }));
    pool.intercept({ path: "/api/v1/projects" }).reply(401, { detail: `token ${TOKEN} expired` });
    const client = createApiClient({
      baseUrl: "http://upstream.test/api/v1",
      token: TOKEN,
      timeoutMs: 5000,
      maxAttempts: 5,
      retriedBy: "next pass",
      log,
      random: () => 0,
      sleep: async () => {},
      dispatcher: agent,
    });
    const error = await client.listProjects().catch((e: unknown) => e);
    log.error({ err: error }, "listing projects failed");
    await agent.close();

    const text = lines.join("");
    expect(text).not.toContain(TOKEN);
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed.filter((l) => l.msg === "api request")).toHaveLength(3);
    expect(parsed.filter((l) => l.level === 40)).toEqual([
      expect.objectContaining({ route: "/projects", status: "503", attempt: 1, delayMs: 0 }),
      expect.objectContaining({ route: "/projects", status: "ECONNRESET", attempt: 2, delayMs: 0 }),
    ]);
    expect(parsed.at(-1)?.err).toMatchObject({ code: "API_UNAUTHORIZED", status: 401 });
  });
});
