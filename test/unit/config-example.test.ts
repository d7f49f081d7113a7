/**
 * config/syncmirror.example.yaml is what README, docs/configuration.md and the "no such file" error
 * tell a user to copy: it must load as shipped, its commented PostgreSQL alternative must load once
 * uncommented, and it must show every key the schema accepts (a key added to the schema without a
 * line here fails).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FileSchema, parseConfig } from "../../src/config.js";

const FILE = "config/syncmirror.example.yaml";
const example = readFileSync(FILE, "utf8");

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
}

/** Every key path the config schema accepts: `api.base_url`, `mirrors.sync_config.users`, ... */
function keyPaths(node: SchemaNode, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    out.push([...prefix, key], ...keyPaths(child, [...prefix, key]));
  }
  if (node.items) out.push(...keyPaths(node.items, prefix));
  for (const alternative of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) {
    out.push(...keyPaths(alternative, prefix));
  }
  return out;
}

/** The lines of a top-level section, from `section:` to the next top-level key. */
function section(name: string): string {
  const start = example.search(new RegExp(`^${name}:`, "m"));
  if (start < 0) return "";
  const rest = example.slice(example.indexOf("\n", start) + 1);
  const end = rest.search(/^[a-z_]+:/m);
  return end < 0 ? rest : rest.slice(0, end);
}

describe(FILE, () => {
  it("loads as shipped, with the overrides of its mirrors applied", () => {
    const config = parseConfig(FILE, example, {});
    expect(config.mirrors.map((m) => m.name)).toEqual(["eng-wiki", "support-tickets", "sales-drive"]);
    const tickets = config.mirrors[1];
    expect(tickets).toMatchObject({
      timezone: "Europe/Berlin",
      maxDeleteFraction: 0.25,
      continueIncomplete: 1,
    });
    expect(config.mirrors[2]?.declared).not.toBeNull();
  });

  it("loads with its commented PostgreSQL lines in place of database.path", () => {
    const uncommented = example
      .replace(/^ {2}path: .*$/m, "")
      .replace(/^ {2}# (url_env|lease_seconds|pool_size):/gm, "  $1:");
    const config = parseConfig(FILE, uncommented, {});
    expect(config.database).toMatchObject({
      urlEnv: "SYNCMIRROR_DATABASE_URL",
      leaseSeconds: 60,
      poolSize: 4,
    });
  });

  it("shows every key the schema accepts, in its section", () => {
    const schema = z.toJSONSchema(FileSchema, { io: "input", unrepresentable: "any" }) as SchemaNode;
    const paths = new Set(keyPaths(schema).map((p) => p.join(".")));
    // A per-mirror override of a default is shown once, under defaults, which says so.
    expect(example).toContain("Every key under `defaults` may be overridden per mirror");
    const missing = [...paths].filter((path) => {
      const [top = "", ...rest] = path.split(".");
      if (top === "mirrors" && paths.has(`defaults.${rest.join(".")}`)) return false;
      if (rest.length === 0) return !new RegExp(`^(# )?${top}:`, "m").test(example);
      const leaf = rest.at(-1);
      return !new RegExp(`(^|[\\s#\`])${leaf}:`, "m").test(section(top));
    });
    expect(missing).toEqual([]);
  });
});
