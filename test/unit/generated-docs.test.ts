/**
 * The documentation generated from the code (`npm run docs`) must be exactly what the generators
 * render now: a config key, a command, a flag or an exit code changed without regenerating fails
 * here, so docs/configuration.md and docs/reference/cli.md cannot drift from what the code does.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATED } from "../../scripts/docs.js";
import { HELP } from "../../src/commands/help.js";

describe("generated documentation", () => {
  it.each(GENERATED.map((g) => [g.file, g] as const))(
    "%s is what npm run docs generates (run it and commit when this fails)",
    (file, { render }) => {
      const committed = readFileSync(file, "utf8");
      expect(committed).toBe(render(committed));
    },
  );

  it("documents every config key, nested ones included", () => {
    const committed = readFileSync("docs/configuration.md", "utf8");
    const keys = [...committed.matchAll(/^#{2,3} `([^`]+)`$/gm)].map((m) => m[1]);
    for (const key of [
      "api.base_url",
      "database.url_env",
      "http.listen",
      "export.page_size",
      "defaults.full_cron",
      "history.keep_days",
      "max_concurrent_mirrors",
      "mirrors[].sync_config.servers",
    ])
      expect(keys).toContain(key);
  });

  it("documents every command with its usage line", () => {
    const cli = readFileSync("docs/reference/cli.md", "utf8");
    for (const [name, help] of Object.entries(HELP)) {
      expect(cli).toContain(`### \`${name}\``);
      expect(cli).toContain(help.usage);
    }
  });
});
