/** Matches "METHOD /path" against templated routes such as "/sync-task/{sync_id}/export". */
import type { Query } from "./paging.js";

export interface RequestContext {
  params: Readonly<Record<string, string>>;
  query: Query;
  body: unknown;
}

export interface Reply {
  status: number;
  /** Undefined: no body (204). */
  body?: unknown;
}

export interface Route {
  method: string;
  template: string;
  handler: (ctx: RequestContext) => Reply;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  | { kind: "wrong-method"; template: string }
  | { kind: "none" };

export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch {
  const segments = path.split("/").filter((s) => s !== "");
  let wrongMethod: string | undefined;
  // Literal segments win over parameters ("/sync-configs/sources" before "/sync-configs/{id}").
  const candidates = routes
    .map((route) => ({ route, params: matchTemplate(route.template, segments) }))
    .filter((c): c is { route: Route; params: Record<string, string> } => c.params !== undefined)
    .sort((a, b) => paramCount(a.route.template) - paramCount(b.route.template));
  for (const { route, params } of candidates) {
    if (route.method === method) return { kind: "found", route, params };
    wrongMethod ??= route.template;
  }
  return wrongMethod === undefined ? { kind: "none" } : { kind: "wrong-method", template: wrongMethod };
}

function matchTemplate(template: string, segments: readonly string[]): Record<string, string> | undefined {
  const parts = template.split("/").filter((s) => s !== "");
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? "";
    const segment = segments[i] ?? "";
    if (part.startsWith("{") && part.endsWith("}")) {
      try {
        params[part.slice(1, -1)] = decodeURIComponent(segment);
      } catch {
        return undefined;
      }
    } else if (part !== segment) {
      return undefined;
    }
  }
  return params;
}

function paramCount(template: string): number {
  return template.split("{").length - 1;
}
