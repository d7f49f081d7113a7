/** One export resource, rendered on demand from (document, version) exactly as docs/reference/upstream-api.md shapes it. */
import { sha256Of } from "./canonical-json.js";
import { formatZuluIso } from "./clock.js";
import type { Dataset } from "./dataset.js";
import {
  attachmentsOf,
  contentFormatOf,
  contentStatusOf,
  contentTextOf,
  fieldsOf,
  metadataOf,
} from "./document-content.js";
import { hash32 } from "./random.js";

export interface ResourceContext {
  dataset: Dataset;
  /** The source label of the run the resource is exported from. */
  label: string;
  engineVersion: number | string;
  fetchedAtMs: number;
}

export function buildResource(ctx: ResourceContext, index: number, version: number, modifiedAtMs: number) {
  const { dataset } = ctx;
  const server = dataset.server(index);
  const nativeId = dataset.nativeId(index);
  const type = dataset.type(index);
  const status = contentStatusOf(dataset, index, version);
  const content = contentOf(dataset, index, version, status, contentFormatOf(server.source_type, type));
  const fields = fieldsOf(dataset, index, version);
  const attachments = attachmentsOf(dataset, index, version);
  return {
    key: `${server.source_type}:${server.server_instance_id}:${nativeId}`,
    source: ctx.label,
    source_type: server.source_type,
    server_instance_id: server.server_instance_id,
    native_id: nativeId,
    type,
    title: dataset.title(index, version),
    url: urlOf(server.source_type, type, nativeId),
    modified_at: Number.isNaN(modifiedAtMs) ? null : formatZuluIso(modifiedAtMs),
    fetched_at: formatZuluIso(ctx.fetchedAtMs),
    content,
    content_status: status,
    fields,
    metadata: metadataOf(dataset, index, modifiedAtMs),
    relations: relationsOf(dataset, index),
    attachments,
    content_hash: sha256Of({ content, fields, attachments, engine_version: ctx.engineVersion }),
    provenance: {
      tool_call_ids: ["call_04", "call_06"],
      content_tool_call_id: content === null ? null : "call_06",
      discovered_by: ["call_02"],
      failed_tool_call_ids: status === "fetch_failed" ? ["call_06"] : [],
    },
  };
}

function contentOf(dataset: Dataset, index: number, version: number, status: string, format: string) {
  if (status === "fetch_failed" || status === "metadata_only") return null;
  const text = contentTextOf(dataset, index, version);
  return { format, text: status === "partial" ? text.slice(0, Math.ceil(text.length / 2)) : text };
}

function urlOf(sourceType: string, type: string, nativeId: string): string {
  if (sourceType === "notion") return `https://www.notion.so/${nativeId}`;
  if (sourceType === "github") {
    const [repo, number] = nativeId.split("#");
    return `https://github.com/${repo}/${type === "pull_request" ? "pull" : "issues"}/${number}`;
  }
  if (type === "spreadsheet") return `https://docs.google.com/spreadsheets/d/${nativeId}/edit`;
  if (type === "document") return `https://docs.google.com/document/d/${nativeId}/edit`;
  return `https://drive.google.com/file/d/${nativeId}/view`;
}

/** Notion pages and Drive files have a parent; GitHub items sometimes reference another item. */
function relationsOf(dataset: Dataset, index: number) {
  const server = dataset.server(index);
  const siblings = dataset.serverDocs(server.index);
  const roll = hash32(dataset.seed, "relation", index);
  const target = siblings[roll % Math.max(1, siblings.length)];
  if (target === undefined || target === index) return [];
  if (server.source_type === "github" && roll % 2 === 0) return [];
  const kind = server.source_type === "github" ? "references" : "parent";
  return [{ kind, target_key: dataset.key(target), resolved: dataset.deleted[target] !== 1 }];
}
