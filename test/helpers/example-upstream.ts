/**
 * A stand-in for the upstream service written from the API reference alone: it answers with the
 * reference's example bodies (`api-examples/`, copied verbatim from the service's documentation),
 * changed only where one answer must agree with another (the run list's sources and status with
 * the run's detail, every `since` with the trigger's). Independent of the simulator, so the mirror
 * is checked against the documented shapes themselves, unknown fields and all.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

const EXAMPLES = join(import.meta.dirname, "api-examples");

const TRIGGER_ID = "0b6e1f0a-5d3c-4c8e-9a61-3f2d7b9c1e04";

export const EXAMPLE = {
  syncConfigId: "7d2c9e41-1a5b-4f3e-8c70-2b9d4e6f8a13",
  /** The first trigger's run; each later trigger's ids end in its number instead. */
  syncId: "4f8a2c61-9e3b-4d75-a0c2-6b1e8d3f5a97",
  notion: "a1c3e5f7-0b2d-4e6f-8a1c-3e5f7b9d1f2a",
  github: "c3e5a7b9-2d4f-4a8b-8c3e-5a7b9d1f3b4c",
  key: "notion:a1c3e5f7-0b2d-4e6f-8a1c-3e5f7b9d1f2a:3e9a1c5b7d2f4a6c8e0b2d4f6a8c0e1f",
} as const;

export interface ExampleRequest {
  method: string;
  url: string;
  authorization: string;
  body: unknown;
}

export interface ExampleUpstream {
  /** `.../api/v1` */
  baseUrl: string;
  requests: ExampleRequest[];
  /** Answers to export reads still to give the 409 "not finished" example before the page. */
  notFinishedAnswers: number;
  /** Changes the example export page before it is served. */
  exportPage?: (page: Record<string, unknown>) => Record<string, unknown>;
  close(): Promise<void>;
}

export async function startExampleUpstream(token: string): Promise<ExampleUpstream> {
  const upstream: ExampleUpstream = {
    baseUrl: "",
    requests: [],
    notFinishedAnswers: 0,
    close: () => Promise.resolve(),
  };
  /** The `since` of the last trigger: the runs, their detail and the export carry it. */
  let since: string | null = null;
  /** Triggers answered: each has ids of its own, as the service's do. */
  let triggers = 0;
  const ids = (id: string) => (triggers <= 1 ? id : `${id.slice(0, -4)}${String(triggers).padStart(4, "0")}`);
  const syncId = () => ids(EXAMPLE.syncId);
  /** An example body, with the last trigger's ids. */
  const example = (name: string): Record<string, unknown> => {
    const text = readFileSync(join(EXAMPLES, `${name}.json`), "utf8")
      .replaceAll(EXAMPLE.syncId, syncId())
      .replaceAll(TRIGGER_ID, ids(TRIGGER_ID));
    return JSON.parse(text) as Record<string, unknown>;
  };

  const answer = (method: string, path: string, body: unknown): { status: number; body: unknown } => {
    if (method === "GET" && path === "/projects")
      return { status: 200, body: [{ id: "p1", name: "Example" }] };
    if (method === "GET" && path === `/sync-configs/${EXAMPLE.syncConfigId}`) {
      return {
        status: 200,
        body: {
          id: EXAMPLE.syncConfigId,
          project_id: "p1",
          name: "Engineering",
          instructions: "Collect the engineering wiki pages and the platform repository's open issues.",
          all_users: false,
          user_emails: ["ana@example.com", "ben@example.com", "cy@example.com"],
          servers: [
            {
              server_instance_id: EXAMPLE.notion,
              server_name: "Team Wiki",
              source_type: "notion",
              available: true,
            },
            {
              server_instance_id: EXAMPLE.github,
              server_name: "GitHub",
              source_type: "github",
              available: true,
            },
          ],
        },
      };
    }
    if (method === "GET" && path === `/sync-configs/${EXAMPLE.syncConfigId}/access`)
      return { status: 200, body: example("access-check") };
    if (method === "POST" && path === "/sync-task") {
      since = (body as { since?: string }).since ?? null;
      triggers++;
      return { status: 200, body: { ...example("trigger-response"), since } };
    }
    const detail: Record<string, unknown> = { ...example("run-detail"), since };
    if (method === "GET" && path === "/sync-task") {
      const list = example("run-list") as { items: Record<string, unknown>[] };
      const sources = (detail.sources as Record<string, unknown>[]).map(
        ({ source, source_type, server_name, server_instance_id, task_id, status }) => ({
          source,
          source_type,
          server_name,
          server_instance_id,
          task_id,
          status,
        }),
      );
      const items = list.items.map((item) => ({ ...item, status: detail.status, since, sources }));
      return { status: 200, body: { ...list, items } };
    }
    if (method === "GET" && path === `/sync-task/${syncId()}`) return { status: 200, body: detail };
    if (method === "GET" && path === `/sync-task/${syncId()}/export`) {
      if (upstream.notFinishedAnswers > 0) {
        upstream.notFinishedAnswers--;
        return { status: 409, body: example("export-not-finished-409") };
      }
      const page = { ...example("export-page"), since };
      return { status: 200, body: upstream.exportPage ? upstream.exportPage(page) : page };
    }
    return { status: 404, body: { detail: "Not Found" } };
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const body: unknown = text ? JSON.parse(text) : undefined;
      const authorization = req.headers.authorization ?? "";
      const url = req.url ?? "/";
      upstream.requests.push({ method: req.method ?? "GET", url, authorization, body });
      const path = (url.split("?")[0] ?? "").replace(/^\/api\/v1/, "");
      const out =
        authorization === `Bearer ${token}`
          ? answer(req.method ?? "GET", path, body)
          : { status: 401, body: { detail: "Invalid token" } };
      const json = JSON.stringify(out.body);
      res.writeHead(out.status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(json),
      });
      res.end(json);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  upstream.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
  upstream.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return upstream;
}
