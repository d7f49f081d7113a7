/**
 * docs/reference/metrics.md lists every metric the daemon registers, with its type and labels, so a
 * metric added or relabelled without its documentation fails here.
 */
import { readFileSync } from "node:fs";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/metrics.js";

const page = readFileSync("docs/reference/metrics.md", "utf8");

/** The table row of one metric: `| \`name\` | type | labels | meaning |`. */
function row(name: string): string | undefined {
  return page.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
}

describe("docs/reference/metrics.md", () => {
  const metrics = createMetrics(new Registry(), { defaultMetrics: false }).registry.getMetricsAsArray();

  it.each(metrics.map((m) => [m.name, m] as const))(
    "documents %s with its type and labels",
    (name, metric) => {
      const line = row(name);
      expect(line, `no row for ${name}`).toBeDefined();
      const cells = line?.split(" | ") ?? [];
      expect(cells[1]).toBe(metric.type);
      const labels = (metric as unknown as { labelNames: string[] }).labelNames;
      for (const label of labels) expect(cells[2]).toContain(`\`${label}\``);
    },
  );
});
