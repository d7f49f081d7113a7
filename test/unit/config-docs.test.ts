/**
 * docs/configuration.md is generated from the config schema (`npm run docs`): it must be exactly
 * what the generator renders now, so a key added or changed without regenerating fails here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderConfigDocs } from "../../scripts/config-docs.js";
import { parseConfig } from "../../src/config.js";

const committed = readFileSync("docs/configuration.md", "utf8");

describe("docs/configuration.md", () => {
  it("is what npm run docs generates from the config schema (run it and commit when this fails)", () => {
    expect(committed).toBe(renderConfigDocs());
  });

  it("documents every key of a config using each section", () => {
    const keys = [...committed.matchAll(/^#{2,3} `([^`]+)`$/gm)].map((m) => m[1]);
    for (const key of [
      "api.base_url",
      "database.url_env",
      "http.listen",
      "export.page_size",
      "defaults.full_cron",
    ])
      expect(keys).toContain(key);
    for (const key of ["history.keep_days", "mirrors[].sync_config.servers", "max_concurrent_mirrors"])
      expect(keys).toContain(key);
  });

  it("gives examples that parse: the minimal config the reference starts from is valid", () => {
    const yaml =
      'api:\n  base_url: "https://api.example.com/api/v1"\nmirrors:\n  - name: eng-wiki\n    sync_config_id: "3f6c2a91"\n';
    expect(parseConfig("c.yaml", yaml, {}).mirrors[0]?.name).toBe("eng-wiki");
  });
});
