/** The programmatic controls behind `sim.people`, `sim.configs` and `sim.runs`. */
import { configView, createConfig, getConfig, MAX_SERVERS_PER_CONFIG } from "./configs.js";
import { HttpError } from "./http-error.js";
import { stepRun } from "./lifecycle.js";
import { newestFirst } from "./paging.js";
import { isFinished, type RunRecord, type SimState } from "./state.js";
import type { ConfigCreateOptions, SimulatorConfigs, SimulatorPeople, SimulatorRuns } from "./types.js";
import { runDetail } from "./views.js";

export function createPeopleApi(state: SimState): SimulatorPeople {
  const { people } = state;
  return {
    list: () => people.emails.map((email, user) => ({ email, projectUser: people.isProjectUser(user) })),
    leaveProject: (email) => people.setProjectUser(email, false),
    joinProject: (email) => people.setProjectUser(email, true),
    setAuth: (email, serverId, status) => people.setAuth(email, serverId, status),
  };
}

export function createConfigsApi(state: SimState): SimulatorConfigs {
  return {
    create(options: ConfigCreateOptions = {}) {
      const allUsers = options.allUsers ?? options.userEmails === undefined;
      const body = {
        project_id: state.project.id,
        name: options.name ?? `Config ${state.configs.size + 1}`,
        instructions: options.instructions ?? "Collect everything useful for search.",
        server_instance_ids:
          options.serverIds ??
          state.dataset.servers.slice(0, MAX_SERVERS_PER_CONFIG).map((s) => s.server_instance_id),
        all_users: allUsers,
        user_emails: options.userEmails ?? [],
      };
      return withPlainErrors(() => createConfig(state, body).id);
    },
    get: (id) => withPlainErrors(() => configView(state, getConfig(state, id))),
    list: () => [...state.configs.values()].sort(newestFirst).map((c) => configView(state, c)),
    setServerAvailable(configId, serverId, available) {
      const config = withPlainErrors(() => getConfig(state, configId));
      if (!config.serverIds.includes(serverId))
        throw new Error(`server ${serverId} is not in config ${configId}`);
      if (available) config.unavailable.delete(serverId);
      else config.unavailable.add(serverId);
    },
    remove(id) {
      state.configs.delete(withPlainErrors(() => getConfig(state, id)).id);
    },
  };
}

export function createRunsApi(state: SimState): SimulatorRuns {
  const getRun = (syncId: string): RunRecord => {
    const run = state.runs.get(syncId);
    if (!run) throw new Error(`unknown run ${syncId}`);
    return run;
  };
  const assertNotHeld = () => {
    if (state.held) throw new Error("runs are held: call sim.runs.release() first");
  };
  return {
    advance(syncId, source) {
      assertNotHeld();
      const runs = syncId === undefined ? [...state.runs.values()] : [getRun(syncId)];
      if (source !== undefined && !runs.some((run) => run.sources.some((s) => s.label === source))) {
        throw new Error(`no run has a source labelled ${source}`);
      }
      for (const run of runs) stepRun(state, run, source);
    },
    finishAll() {
      assertNotHeld();
      for (const run of state.runs.values()) {
        while (!run.sources.every((s) => isFinished(s.status))) stepRun(state, run);
      }
    },
    hold() {
      state.held = true;
    },
    release() {
      state.held = false;
    },
    get held() {
      return state.held;
    },
    remove(syncId) {
      state.runs.delete(getRun(syncId).syncId);
    },
    list: () => [...state.runs.values()].sort(newestFirst).map((run) => runDetail(state, run)),
    get: (syncId) => runDetail(state, getRun(syncId)),
  };
}

/** Programmatic calls throw plain Errors carrying the API's detail text. */
function withPlainErrors<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof HttpError) {
      const detail = typeof error.detail === "string" ? error.detail : JSON.stringify(error.detail);
      throw new Error(`${error.status}: ${detail}`, { cause: error });
    }
    throw error;
  }
}
