/** The API's routes, each a thin handler over state: what docs/reference/upstream-api.md lists, nothing more. */
import { formatOffsetIso } from "./clock.js";
import { accessItems, configView, createConfig, getConfig, replaceConfig } from "./configs.js";
import { exportPage } from "./export.js";
import type { FaultController } from "./faults.js";
import { HttpError, invalid, notFound } from "./http-error.js";
import { continueRun, observeRun } from "./lifecycle.js";
import { keysetPage, newestFirst, offsetPage } from "./paging.js";
import { premiumRefusal } from "./premium.js";
import type { Route } from "./router.js";
import type { RunRecord, SimState } from "./state.js";
import { transcriptPage } from "./transcript.js";
import { triggerSync } from "./trigger.js";
import { runDetail, runListItem } from "./views.js";

export function createRoutes(state: SimState, faults: FaultController): Route[] {
  const getRun = (syncId: string | undefined): RunRecord => {
    const run = state.runs.get(syncId ?? "");
    if (!run) throw notFound("sync task");
    return run;
  };
  const requirePremium = () => {
    if (!state.premium) throw premiumRefusal(state.premiumRefusalStatus);
  };
  const checkProject = (projectId: string | undefined, required: boolean) => {
    if (projectId === undefined || projectId === "") {
      if (required) throw invalid(["query", "project_id"], "Field required", "missing");
    } else if (projectId !== state.project.id) {
      throw notFound("project");
    }
  };
  const { project } = state;
  return [
    route("GET", "/projects", () => ({
      status: 200,
      body: [{ id: project.id, name: project.name, created_at: formatOffsetIso(project.createdAtMs) }],
    })),
    route("GET", "/sync-configs/sources", ({ query }) => {
      checkProject(query.project_id, true);
      const sources = state.dataset.servers.map((s) => ({
        server_instance_id: s.server_instance_id,
        server_name: s.server_name,
        display_name: s.display_name,
        source_type: s.source_type,
        rules_version: 1,
      }));
      return { status: 200, body: { sources } };
    }),
    route("POST", "/sync-configs", ({ body }) => {
      requirePremium();
      return { status: 201, body: configView(state, createConfig(state, body)) };
    }),
    route("GET", "/sync-configs", ({ query }) => {
      checkProject(query.project_id, false);
      const configs = [...state.configs.values()].filter(
        (c) => !query.project_id || c.projectId === query.project_id,
      );
      const page = keysetPage(configs.sort(newestFirst), query, 20);
      return { status: 200, body: { items: page.items.map((c) => configView(state, c)), meta: page.meta } };
    }),
    route("GET", "/sync-configs/{id}", ({ params }) => ({
      status: 200,
      body: configView(state, getConfig(state, params.id ?? "")),
    })),
    route("PUT", "/sync-configs/{id}", ({ params, body }) => {
      requirePremium();
      return { status: 200, body: configView(state, replaceConfig(state, params.id ?? "", body)) };
    }),
    route("DELETE", "/sync-configs/{id}", ({ params }) => {
      state.configs.delete(getConfig(state, params.id ?? "").id);
      return { status: 204 };
    }),
    route("GET", "/sync-configs/{id}/access", ({ params, query }) => {
      const page = offsetPage(accessItems(state, getConfig(state, params.id ?? "")), query, 20);
      return { status: 200, body: page };
    }),
    route("POST", "/sync-task", ({ body }) => ({ status: 201, body: triggerSync(state, body) })),
    route("GET", "/sync-task", ({ query }) => {
      const runs = [...state.runs.values()].filter(
        (run) =>
          (!query.trigger_id || run.triggerId === query.trigger_id) &&
          (!query.sync_config_id || run.configId === query.sync_config_id) &&
          (!query.project_id || run.projectId === query.project_id),
      );
      const page = keysetPage(runs.sort(newestFirst), query, 50);
      const body = { items: page.items.map(runListItem), meta: page.meta };
      for (const run of page.items) observeRun(state, run);
      return { status: 200, body };
    }),
    route("GET", "/sync-task/{sync_id}", ({ params }) => {
      const run = getRun(params.sync_id);
      const body = runDetail(state, run);
      observeRun(state, run);
      return { status: 200, body };
    }),
    route("GET", "/sync-task/{sync_id}/export", ({ params, query }) => {
      const run = getRun(params.sync_id);
      // A client may poll only the export (409 until the run finishes): that is a read of the run too.
      let body: ReturnType<typeof exportPage>;
      try {
        body = exportPage(state, run, query, faults);
      } catch (error) {
        if (error instanceof HttpError && error.status === 409) observeRun(state, run);
        throw error;
      }
      observeRun(state, run);
      return { status: 200, body };
    }),
    route("POST", "/sync-task/{sync_id}/continue", ({ params, body }) => {
      const run = getRun(params.sync_id);
      continueRun(state, run, body);
      return { status: 200, body: runDetail(state, run) };
    }),
    route("GET", "/sync-task/{sync_id}/transcript", ({ params, query }) => ({
      status: 200,
      body: transcriptPage(state, getRun(params.sync_id), query),
    })),
  ];
}

function route(method: string, template: string, handler: Route["handler"]): Route {
  return { method, template, handler };
}
