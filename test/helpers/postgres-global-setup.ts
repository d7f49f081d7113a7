/**
 * vitest's global setup: builds the PostgreSQL template before any worker starts (so the workers
 * do not queue on its lock), and at the end drops every test database of the run: the free ones
 * kept for reuse, and any a killed worker left.
 */
import { randomBytes } from "node:crypto";
import type { TestProject } from "vitest/node";
import { dropRunDatabases, ensureTemplate, postgresAvailable } from "./postgres.js";

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!(await postgresAvailable())) return undefined;
  const runId = randomBytes(3).toString("hex");
  project.provide("postgresRunId", runId);
  await ensureTemplate();
  return async () => {
    await dropRunDatabases(runId);
  };
}
