/**
 * Telling "this sync config does not exist" from "api.base_url points at the wrong place": both
 * answer 404. `GET /projects` exists on every deployment, so a 404 there means the base URL is
 * wrong (most often missing its `/api/v1` prefix), not the config id.
 */
import { NotFoundError } from "../errors.js";
import type { ApiClient } from "./client.js";

export const WRONG_BASE_URL_ADVICE =
  "api.base_url answers 404 on every route (GET /projects included): it must be the API's base URL with its version prefix, e.g. https://host/api/v1";

/** True when `GET /projects` answers 404. Any other failure says nothing about the base URL. */
export async function isBaseUrlWrong(api: ApiClient, signal?: AbortSignal): Promise<boolean> {
  try {
    await api.listProjects(signal);
    return false;
  } catch (error) {
    return error instanceof NotFoundError;
  }
}
