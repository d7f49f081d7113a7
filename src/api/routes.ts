/**
 * The upstream paths the client calls (docs/reference/upstream-api.md#calls), as templates. A template is what logs,
 * metrics and errors show: it never carries an id or a query string.
 */
export const routes = Object.freeze({
  syncableSources: "/sync-configs/sources",
  /** POST: create; GET: list a project's configs. */
  syncConfigs: "/sync-configs",
  syncConfig: "/sync-configs/{id}",
  syncConfigAccess: "/sync-configs/{id}/access",
  projects: "/projects",
  /** POST: trigger; GET: list runs. */
  syncTasks: "/sync-task",
  run: "/sync-task/{sync_id}",
  runExport: "/sync-task/{sync_id}/export",
  runContinue: "/sync-task/{sync_id}/continue",
  runTranscript: "/sync-task/{sync_id}/transcript",
});

export type Route = (typeof routes)[keyof typeof routes];

/** The concrete path of a template: each `{name}` replaced by its URL-encoded, non-empty value. */
export function fillRoute(route: Route, params: Readonly<Record<string, string>> = {}): string {
  return route.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (!value) throw new TypeError(`route ${route}: missing value for {${name}}`);
    return encodeURIComponent(value);
  });
}

/** A query string (with its `?`) from the defined entries only; empty when there are none. */
export function queryString(query: Readonly<Record<string, string | number | undefined>> = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
