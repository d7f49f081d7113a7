import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";

/** The issues of the ConfigError a config text raises; throws when it raises none. */
export function issuesOf(
  text: string,
  env: Record<string, string> = {},
): { path: string; message: string }[] {
  try {
    parseConfig("cfg.yaml", text, env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.issues];
    throw error;
  }
  throw new Error("expected a ConfigError");
}
