/**
 * vitest's global setup: builds the PostgreSQL template before any worker starts (so the workers
 * do not queue on its lock), and at the end drops every test database this run left behind.
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
    const left = await dropRunDatabases(runId);
    if (left > 0) console.warn(`dropped ${left} PostgreSQL test database(s) this run left behind`);
  };
}
