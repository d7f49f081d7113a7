import { describe, expect, it } from "vitest";
import { createPageWindow } from "../../../src/sync/page-window.js";

describe("the pass-wide window of export pages fetched ahead", () => {
  it("hands out at most its size in slots, and takes them back", () => {
    const w = createPageWindow(3);
    expect([w.tryTake(), w.tryTake(), w.tryTake(), w.tryTake()]).toEqual([true, true, true, false]);
    w.give();
    expect(w.tryTake()).toBe(true);
    expect(w.taken).toBe(3);
  });

  it("lends one page less for each run open beside the first", () => {
    const w = createPageWindow(3);
    w.runOpened();
    w.runOpened();
    w.runOpened();
    expect([w.tryTake(), w.tryTake()]).toEqual([true, false]);
    w.runClosed();
    expect([w.tryTake(), w.tryTake()]).toEqual([true, false]);
    w.runClosed();
    w.runClosed();
    expect([w.tryTake(), w.tryTake()]).toEqual([true, false]);
    expect(w.taken).toBe(3);
  });

  it("halves on each 429, down to no pages ahead at all", () => {
    const w = createPageWindow(8);
    w.throttled();
    expect(w.size).toBe(4);
    w.throttled();
    w.throttled();
    expect(w.size).toBe(1);
    w.throttled();
    expect(w.size).toBe(0);
    expect(w.tryTake()).toBe(false);
  });

  it("keeps slots already taken when it shrinks, and lends none until enough come back", () => {
    const w = createPageWindow(4);
    for (let i = 0; i < 4; i++) w.tryTake();
    w.throttled();
    expect(w.size).toBe(2);
    w.give();
    expect(w.tryTake()).toBe(false);
    w.give();
    w.give();
    expect(w.tryTake()).toBe(true);
  });

  it("grows back by one page per window's worth of answers, up to its configured size", () => {
    const w = createPageWindow(4);
    w.throttled();
    w.throttled();
    expect(w.size).toBe(1);
    w.answered();
    expect(w.size).toBe(2);
    w.answered();
    expect(w.size).toBe(2);
    w.answered();
    expect(w.size).toBe(3);
    for (let i = 0; i < 3; i++) w.answered();
    expect(w.size).toBe(4);
    for (let i = 0; i < 10; i++) w.answered();
    expect(w.size).toBe(4);
  });

  it("grows from zero after a single answer", () => {
    const w = createPageWindow(2);
    w.throttled();
    w.throttled();
    expect(w.size).toBe(0);
    w.answered();
    expect(w.size).toBe(1);
  });

  it("a 429 in the middle of growing back starts the count again", () => {
    const w = createPageWindow(8);
    w.throttled();
    w.throttled();
    expect(w.size).toBe(2);
    w.answered();
    w.throttled();
    expect(w.size).toBe(1);
    w.answered();
    expect(w.size).toBe(2);
  });
});
