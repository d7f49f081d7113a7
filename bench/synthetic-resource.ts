import type { ResourceWrite } from "../src/store/types.js";

/** A synthetic document resource of the size and vocabulary the simulator exports (search.ts and pg-search.ts). */
export function syntheticResource(
  i: number,
  title: string,
  type: string,
  text: string,
  at: string,
): ResourceWrite {
  return {
    key: `bench:${i}`,
    contentHash: `h${i}`,
    contentText: text,
    contentFormat: "markdown",
    contentStatus: "full",
    title,
    url: `https://example.com/${i}`,
    type,
    sourceType: "notion",
    serverInstanceId: "server-1",
    nativeId: String(i),
    modifiedAt: at,
    fetchedAt: at,
    fields: null,
    metadata: JSON.stringify({ i }),
    relations: null,
    attachments: null,
    provenance: null,
  };
}
