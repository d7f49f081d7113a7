import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("log lines of a sync", () => {
  it("name the mirror and the trigger, even on the API client's retry warnings", async () => {
    h = await createHarness();
    h.sim.faults.inject("GET /sync-task/{sync_id}/export", { kind: "503", times: 1 });
    const { code, stderr } = await h.cli(["sync"], { LOG_LEVEL: "info" });
    expect(code, stderr).toBe(0);
    const lines = stderr
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const retry = lines.find((l) => l.msg === "api request failed; retrying");
    expect(retry).toMatchObject({ mirror: "main", route: "/sync-task/{sync_id}/export", status: "503" });
    expect(retry?.trigger_id).toEqual(expect.any(String));
    const passLines = lines.filter((l) => l.msg !== "api request failed; retrying");
    for (const line of passLines) expect(line.mirror).toBe("main");
  });
});
