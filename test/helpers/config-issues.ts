/** The issues `parseConfig` refuses a config text with; fails the test when it accepts it. */
import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";

export function configIssues(
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
