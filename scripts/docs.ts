/** Everything `npm run docs` generates: each target file and its contents given the current one. */
import { withCliCommands } from "./cli-docs.js";
import { renderConfigDocs } from "./config-docs.js";

export const GENERATED: readonly { file: string; render: (current: string) => string }[] = [
  { file: "docs/configuration.md", render: () => renderConfigDocs() },
  { file: "docs/reference/cli.md", render: withCliCommands },
];
