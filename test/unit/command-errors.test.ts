import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { withErrors } from "../../src/commands/common.js";
import { BadRequestError } from "../../src/errors.js";

describe("a command stopped by an error", () => {
  it("prints the service's text in its message with control characters as \\xHH", async () => {
    const stderr = new PassThrough();
    const chunks: string[] = [];
    stderr.on("data", (c: Buffer) => chunks.push(c.toString()));
    const io = {
      stdout: new PassThrough(),
      stderr,
      env: {},
      signal: new AbortController().signal,
      isTty: false,
    };
    const code = await withErrors(io, async () => {
      throw new BadRequestError(
        "PUT /sync-configs/{id} refused (400): bad \u001b[2J\u001b]0;owned\u0007 name",
        {
          method: "PUT",
          route: "/sync-configs/{id}",
          status: 400,
        },
      );
    });
    expect(code).toBe(1);
    expect(chunks.join("")).toBe(
      "syncmirror: PUT /sync-configs/{id} refused (400): bad \\x1b[2J\\x1b]0;owned\\x07 name\n",
    );
  });
});
