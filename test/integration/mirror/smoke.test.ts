import { afterEach, describe, expect, it } from "vitest";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

describe("smoke", () => {
  it("mirrors a workspace on the first pass as a full snapshot", async () => {
    h = await createHarness();
    const s = await h.sync();
    expect(s.mode).toBe("full");
    expect(s.outcome).toBe("succeeded");
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });
});
