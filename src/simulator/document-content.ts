/** What a document looks like at one version: content, fields, attachments. Pure and deterministic. */
import { formatZuluIso } from "./clock.js";
import type { Dataset } from "./dataset.js";
import { hash32, type Random, randomFor } from "./random.js";
import { generateBody, generateSentence, generateSize } from "./text.js";

export type ContentStatus = "available" | "partial" | "metadata_only" | "fetch_failed";

export interface Attachment {
  kind: string;
  data: unknown;
  complete: boolean;
  tool_call_ids: string[];
}

/** Generated documents: ~1% fetch_failed, 1.5% metadata_only, 2% partial; pinned ones are available. */
export function contentStatusOf(dataset: Dataset, index: number, version: number): ContentStatus {
  if (dataset.pinned(index, version)) return "available";
  const roll = hash32(dataset.seed, "status", index, version) % 1000;
  if (roll < 10) return "fetch_failed";
  if (roll < 25) return "metadata_only";
  if (roll < 45) return "partial";
  return "available";
}

export function contentFormatOf(sourceType: string, type: string): string {
  if (sourceType === "notion") return "notion_markdown";
  if (type === "file") return "text";
  return "markdown";
}

/** The full text of a document at `version` (before `partial` truncation). */
export function contentTextOf(dataset: Dataset, index: number, version: number): string {
  const pinned = dataset.pinned(index, version);
  const title = dataset.title(index, version);
  if (pinned?.content !== undefined) {
    return pinned.contentVersion === version ? pinned.content : `${pinned.content}\n\nRevision ${version}.`;
  }
  const random = randomFor(dataset.seed, "content", index, version);
  return generateBody(title, pinned?.contentBytes ?? generateSize(random), random);
}

export function fieldsOf(dataset: Dataset, index: number, version: number): unknown {
  const pinned = dataset.pinned(index, version);
  if (pinned?.fields !== undefined) return pinned.fields;
  const random = randomFor(dataset.seed, "fields", index, version);
  const type = dataset.type(index);
  const person = () => random.pick(dataset.users.length > 0 ? dataset.users : ["owner@example.com"]);
  switch (type) {
    case "page":
      return { status: random.pick(["Draft", "Published", "In review"]), tags: pickTags(random) };
    case "database":
      return {
        properties: { Name: "title", Status: "select", Owner: "people" },
        row_count: random.int(3, 400),
      };
    case "data_source":
      return { view: random.pick(["Table", "Board", "Calendar"]), filters: random.int(0, 4) };
    case "issue":
      return { state: random.pick(["open", "closed"]), labels: pickTags(random), assignees: [person()] };
    case "pull_request":
      return {
        state: random.pick(["open", "merged", "closed"]),
        base: "main",
        additions: random.int(1, 900),
        deletions: random.int(0, 400),
      };
    default:
      return { mime_type: mimeOf(type), owners: [person()], shared: random.chance(0.5) };
  }
}

export function attachmentsOf(dataset: Dataset, index: number, version: number): Attachment[] {
  const random = randomFor(dataset.seed, "attachments", index, version);
  const attachments: Attachment[] = [];
  if (random.chance(0.35)) {
    const comments = Array.from({ length: random.int(1, 4) }, () => ({
      author: random.pick(dataset.users.length > 0 ? dataset.users : ["owner@example.com"]),
      text: generateSentence(random),
    }));
    attachments.push({ kind: "comments", data: comments, complete: true, tool_call_ids: ["call_07"] });
  }
  if (dataset.type(index) === "file") {
    const data = { mime_type: mimeOf("file"), size_bytes: random.int(1_000, 5_000_000) };
    attachments.push({ kind: "file_info", data, complete: random.chance(0.9), tool_call_ids: ["call_08"] });
  }
  return attachments;
}

export function metadataOf(dataset: Dataset, index: number, modifiedAtMs: number): Record<string, unknown> {
  const random = randomFor(dataset.seed, "metadata", index);
  const users = dataset.users.length > 0 ? dataset.users : ["owner@example.com"];
  const created = Number.isNaN(modifiedAtMs) ? null : modifiedAtMs - random.int(0, 400) * 86_400_000;
  return {
    created_by: random.pick(users),
    created_time: created === null ? null : formatZuluIso(created),
    last_edited_by: random.pick(users),
  };
}

function pickTags(random: Random): string[] {
  const tags = ["urgent", "backend", "frontend", "docs", "q3", "customer", "infra"];
  return tags.filter(() => random.chance(0.25));
}

function mimeOf(type: string): string {
  if (type === "spreadsheet") return "application/vnd.google-apps.spreadsheet";
  if (type === "document") return "application/vnd.google-apps.document";
  return "application/pdf";
}
