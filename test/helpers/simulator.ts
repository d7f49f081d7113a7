/**
 * Test helpers for the simulated upstream service: a per-test simulator closed when the test ends,
 * and a tiny fetch wrapper that speaks its API (bearer token, JSON both ways).
 */
import { onTestFinished } from "vitest";
import { type Simulator, type SimulatorOptions, startSimulator } from "../../src/simulator/index.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests, shapes are asserted
export type Body = any;

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Body;
}

export interface TestApi {
  get(path: string, query?: Record<string, string | number | undefined>): Promise<ApiResponse>;
  post(path: string, body?: unknown): Promise<ApiResponse>;
  put(path: string, body?: unknown): Promise<ApiResponse>;
  del(path: string): Promise<ApiResponse>;
  request(
    method: string,
    path: string,
    init?: { body?: string; token?: string | null },
  ): Promise<ApiResponse>;
}

/** Starts a simulator for the current test; it is closed when the test finishes. */
export async function startTestSimulator(
  options?: SimulatorOptions,
): Promise<{ sim: Simulator; api: TestApi }> {
  const sim = await startSimulator(options);
  onTestFinished(() => sim.close());
  return { sim, api: createTestApi(sim) };
}

export function createTestApi(sim: Pick<Simulator, "baseUrl" | "token">): TestApi {
  const request: TestApi["request"] = async (method, path, init = {}) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    const token = init.token === undefined ? sim.token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const response = await fetch(`${sim.baseUrl}${path}`, { method, headers, body: init.body });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text === "" ? undefined : JSON.parse(text),
    };
  };
  return {
    request,
    get(path, query = {}) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query))
        if (value !== undefined) params.set(key, String(value));
      const suffix = params.size > 0 ? `?${params}` : "";
      return request("GET", `${path}${suffix}`);
    },
    post: (path, body) =>
      request("POST", path, { body: body === undefined ? undefined : JSON.stringify(body) }),
    put: (path, body) => request("PUT", path, { body: JSON.stringify(body) }),
    del: (path) => request("DELETE", path),
  };
}

/** POST /sync-task for `syncConfigId` (extra body fields merged in); expects 201. */
export async function trigger(
  api: TestApi,
  syncConfigId: string,
  extra: Record<string, unknown> = {},
): Promise<Body> {
  const response = await api.post("/sync-task", { sync_config_id: syncConfigId, ...extra });
  if (response.status !== 201)
    throw new Error(`trigger answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Reads the run until it has finished (on-poll lifecycle); returns the finished detail. */
export async function pollUntilFinished(api: TestApi, syncId: string): Promise<Body> {
  for (let read = 0; read < 20; read++) {
    const { body } = await api.get(`/sync-task/${syncId}`);
    if (["completed", "incomplete", "failed"].includes(body.status)) return body;
  }
  throw new Error(`run ${syncId} did not finish within 20 reads`);
}

/** Every page of an export, following next_offset. */
export async function exportAll(
  api: TestApi,
  syncId: string,
  query: Record<string, string | number | undefined> = {},
): Promise<Body[]> {
  const pages: Body[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const response = await api.get(`/sync-task/${syncId}/export`, { ...query, offset });
    if (response.status !== 200) throw new Error(`export answered ${response.status}`);
    pages.push(response.body);
    offset = response.body.page.next_offset;
  }
  return pages;
}

/** Replaces an explicit sync config through the service's API (PUT), keeping what `changes` does not name; expects 200. */
export async function replaceSyncConfig(
  sim: Pick<Simulator, "baseUrl" | "token" | "projectId" | "configs">,
  id: string,
  changes: { server_instance_ids?: string[]; user_emails: string[] },
): Promise<void> {
  const config = sim.configs.get(id);
  const put = await createTestApi(sim).put(`/sync-configs/${id}`, {
    project_id: sim.projectId,
    name: config.name,
    instructions: config.instructions,
    server_instance_ids: config.server_instance_ids,
    all_users: false,
    ...changes,
  });
  if (put.status !== 200)
    throw new Error(`PUT /sync-configs/${id} answered ${put.status}: ${JSON.stringify(put.body)}`);
}
