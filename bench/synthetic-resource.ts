import type { ResourceWrite, SeenRow } from "../src/store/types.js";

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

/** One user's sighting of a synthetic resource. */
export function syntheticSeen(key: string, userEmail: string, at: string): SeenRow {
  return { mirror: "bench", userEmail, serverInstanceId: "server-1", key, source: "notion", seenAt: at };
}
