import { describe, expect, it } from "vitest";
import {
  BadRequestError,
  CannotStartError,
  FeatureDisabledError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
} from "../../src/errors.js";
import type { Trigger } from "../../src/store/types.js";
import { classifyFailure } from "../../src/sync/classify.js";
import type { BoundMirror } from "../../src/sync/context.js";

const mirror = { name: "wiki", syncConfigId: "cfg-1", declared: null } as BoundMirror;
const post = { method: "POST", route: "/sync-task" };
const intent = { state: "intent" } as Trigger;
const active = { state: "active" } as Trigger;

describe("classifyFailure (outcome and exit code)", () => {
  it("refuses and closes a trigger the service would not start (400, 409)", () => {
    for (const error of [new CannotStartError("busy", post), new BadRequestError("too many pairs", post)])
      expect(classifyFailure(error, mirror, intent)).toMatchObject({
        outcome: "refused",
        keepInFlight: false,
      });
  });

  it("refuses while the premium feature is off, keeping an already running trigger to resume", () => {
    const off = new FeatureDisabledError("turn on Background Sync", post);
    expect(classifyFailure(off, mirror, intent)).toMatchObject({ outcome: "refused", keepInFlight: false });
    expect(classifyFailure(off, mirror, active)).toMatchObject({ outcome: "refused", keepInFlight: true });
  });

  it("fails naming the config key when the sync config does not exist upstream", () => {
    const result = classifyFailure(new NotFoundError("not found", post), mirror, intent);
    expect(result).toMatchObject({ outcome: "failed", keepInFlight: false });
    expect(result.message).toContain("mirrors[].sync_config_id for wiki");
  });

  it("tells a declared mirror whose config vanished upstream to apply it again", () => {
    const declared = { ...mirror, declared: { name: "Wiki" } } as BoundMirror;
    const result = classifyFailure(new NotFoundError("not found", post), declared, intent);
    expect(result).toMatchObject({ outcome: "failed", keepInFlight: false });
    expect(result.message).toContain('("Wiki", declared by wiki)');
    expect(result.message).toContain("syncmirror apply");
  });

  it("keeps the trigger in flight for anything that may pass: a rejected token, an outage", () => {
    for (const error of [new UnauthorizedError("token rejected", post), new UnavailableError("503", post)])
      expect(classifyFailure(error, mirror, active)).toMatchObject({ outcome: "failed", keepInFlight: true });
  });
});
