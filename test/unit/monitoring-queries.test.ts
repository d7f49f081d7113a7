/**
 * config/prometheus-alerts.yml and config/grafana-dashboard.json (docs/operations.md) query the
 * daemon's metrics by name and label. Prometheus answers a query on a metric or label that does not
 * exist with nothing, not an error: an alert on a renamed metric never fires and a panel stays
 * empty. So every metric they name is one the daemon registers (its own or prom-client's default
 * ones), and every label they select or group by is one of those metrics' labels.
 */
import { readFileSync } from "node:fs";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createMetrics } from "../../src/metrics.js";

const metrics = createMetrics(new Registry()).registry.getMetricsAsArray();
const labelsOf = new Map(
  metrics.map((m) => [m.name, (m as unknown as { labelNames?: string[] }).labelNames ?? []] as const),
);
/** Labels Prometheus itself adds or a histogram's series carry. */
const IMPLICIT = new Set(["job", "instance", "le"]);

const alerts = parse(readFileSync("config/prometheus-alerts.yml", "utf8")) as {
  groups: { rules: { alert?: string; expr: string }[] }[];
};
const dashboard = readFileSync("config/grafana-dashboard.json", "utf8");

const queries: [where: string, expr: string][] = [
  ...alerts.groups.flatMap((g) => g.rules.map((r) => [`alert ${r.alert}`, r.expr] as [string, string])),
  ...[...dashboard.matchAll(/"expr": "((?:[^"\\]|\\.)*)"/g)].map(
    (m, i) => [`dashboard query ${i + 1}`, JSON.parse(`"${m[1]}"`) as string] as [string, string],
  ),
];

/** A histogram's series (`_bucket`, `_sum`, `_count`) belong to the histogram's name. */
function metricOf(series: string): string {
  if (labelsOf.has(series)) return series;
  return series.replace(/_(bucket|sum|count)$/, "");
}

describe("the alerts and the dashboard", () => {
  it("have queries to check", () => {
    expect(queries.length).toBeGreaterThan(20);
  });

  it.each(queries)("%s queries metrics and labels the daemon has", (_where, expr) => {
    const named = [...expr.matchAll(/\b((?:syncmirror|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) =>
      metricOf(m[1] ?? ""),
    );
    expect(named.filter((name) => !labelsOf.has(name))).toEqual([]);
    const known = new Set([...IMPLICIT, ...named.flatMap((name) => labelsOf.get(name) ?? [])]);
    const selected = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) =>
      [...(m[1] ?? "").matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1] ?? ""),
    );
    const grouped = [...expr.matchAll(/\b(?:by|on)\s*\(([^)]*)\)/g)].flatMap((m) =>
      (m[1] ?? "").split(",").map((l) => l.trim()),
    );
    expect([...selected, ...grouped].filter((label) => label !== "" && !known.has(label))).toEqual([]);
  });
});
