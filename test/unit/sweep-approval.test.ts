/** The mass-delete guard and `approve-sweep` (src/sync/sweep-approval.ts), one rule per case. */
import { describe, expect, it } from "vitest";
import { decideGuard } from "../../src/sync/sweep-approval.js";

const guard = { maxDeleteFraction: 0.5, allowMassDelete: false, approved: null };

describe("the mass-delete guard", () => {
  it.each([
    [
      "10 keys or fewer, even all of the pair's",
      { revocable: 10, total: 10 },
      { apply: true, approved: false },
    ],
    [
      "no more than the fraction, however many",
      { revocable: 50, total: 100 },
      { apply: true, approved: false },
    ],
    ["more than 10 keys and more than the fraction: held", { revocable: 51, total: 100 }, { apply: false }],
  ])("%s", (_, pair, decision) => {
    expect(decideGuard(pair, guard)).toEqual(decision);
  });

  it("applies anything with --allow-mass-delete", () => {
    expect(decideGuard({ revocable: 100, total: 100 }, { ...guard, allowMassDelete: true })).toEqual({
      apply: true,
      approved: false,
    });
  });

  it("applies a held sweep on its approval, up to what was approved plus the guard's allowance", () => {
    const approved = { ...guard, approved: 30 };
    expect(decideGuard({ revocable: 30, total: 30 }, approved)).toEqual({ apply: true, approved: true });
    // 40 keys: the guard alone lets 20 through; 30 approved + 20 = 50.
    expect(decideGuard({ revocable: 40, total: 40 }, approved)).toEqual({ apply: true, approved: true });
    expect(decideGuard({ revocable: 61, total: 61 }, approved)).toEqual({ apply: false });
    expect(
      decideGuard({ revocable: 12, total: 100 }, approved),
      "within the allowance: not on the approval",
    ).toEqual({ apply: true, approved: false });
  });
});
