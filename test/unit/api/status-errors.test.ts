import { describe, expect, it } from "vitest";
import { fillRoute, queryString, routes } from "../../../src/api/routes.js";
import { describeDetail, errorForStatus, isFeatureDisabledDetail } from "../../../src/api/status-errors.js";
import {
  BadRequestError,
  BadResponseError,
  CannotStartError,
  ConflictError,
  FeatureDisabledError,
  NotFoundError,
  UnauthorizedError,
} from "../../../src/errors.js";

const get = { method: "GET", route: routes.run, tokenEnv: "MY_TOKEN" };
const trigger = { method: "POST", route: routes.syncTasks, tokenEnv: "MY_TOKEN" };

describe("errorForStatus", () => {
  it.each([
    [get, 401, "whatever", UnauthorizedError],
    [get, 403, "forbidden", UnauthorizedError],
    [get, 403, "Premium features are off", FeatureDisabledError],
    [trigger, 409, "Background sync is disabled", FeatureDisabledError],
    [trigger, 409, { message: "feature not enabled for tenant" }, FeatureDisabledError],
    [trigger, 409, "a sync is already running", CannotStartError],
    [get, 409, "run not finished", ConflictError],
    [trigger, 400, "no user can reach any server", BadRequestError],
    [get, 422, [{ loc: ["query", "limit"] }], BadRequestError],
    [get, 404, "Not Found", NotFoundError],
    [get, 410, "gone", BadRequestError],
    [get, 302, undefined, BadResponseError],
  ] as const)("%o %i %o", (call, status, detail, ErrorClass) => {
    const error = errorForStatus({ ...call, status, detail });
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error.status).toBe(status);
    expect(error.detail).toEqual(detail);
    expect(error.route).toBe(call.route);
  });

  it("says what to do next", () => {
    expect(errorForStatus({ ...get, status: 401 }).message).toContain("create a new platform access token");
    expect(errorForStatus({ ...get, status: 401 }).message).toContain("$MY_TOKEN");
    expect(errorForStatus({ ...trigger, status: 403, detail: "premium" }).message).toContain(
      "turn on Background Sync under Administration > Premium Features",
    );
  });
});

describe("isFeatureDisabledDetail", () => {
  it("matches the premium switch in strings and objects, case-insensitively", () => {
    expect(isFeatureDisabledDetail("PREMIUM feature required")).toBe(true);
    expect(isFeatureDisabledDetail({ error: "Feature is turned off" })).toBe(true);
    expect(isFeatureDisabledDetail("background_sync not enabled")).toBe(true);
  });

  it("does not match unrelated conflicts", () => {
    expect(isFeatureDisabledDetail("a sync is already running")).toBe(false);
    expect(isFeatureDisabledDetail("feature flag offset invalid")).toBe(false);
    expect(isFeatureDisabledDetail(undefined)).toBe(false);
    expect(isFeatureDisabledDetail({ sources: [{ source: "github", status: "RUNNING" }] })).toBe(false);
  });
});

describe("describeDetail", () => {
  it("prefers a message, flattens whitespace, truncates", () => {
    expect(describeDetail({ message: "not\n finished", sources: [] })).toBe("not finished");
    expect(describeDetail(["a"])).toBe('["a"]');
    expect(describeDetail(undefined)).toBe("");
    expect(describeDetail("x".repeat(400))).toHaveLength(303);
  });
});

describe("routes", () => {
  it("fills templates with encoded ids and refuses an empty one", () => {
    expect(fillRoute(routes.runExport, { sync_id: "a/b c" })).toBe("/sync-task/a%2Fb%20c/export");
    expect(() => fillRoute(routes.run, { sync_id: "" })).toThrow(TypeError);
    expect(fillRoute(routes.projects)).toBe("/projects");
  });

  it("builds a query string from defined values only", () => {
    expect(queryString({ offset: 0, limit: 500, source: undefined })).toBe("?offset=0&limit=500");
    expect(queryString({ cursor: undefined })).toBe("");
  });
});
