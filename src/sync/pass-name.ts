import type { Mode } from "../store/types.js";

/** "a full pass", "an incremental pass": how messages name a pass of a mode. */
export function aPass(mode: Mode): string {
  return `${mode === "incremental" ? "an" : "a"} ${mode} pass`;
}
