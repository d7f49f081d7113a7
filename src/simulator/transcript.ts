/** GET /sync-task/{id}/transcript: the agent's conversation for one source, generated on read. */
import { formatOffsetIso } from "./clock.js";
import { HttpError } from "./http-error.js";
import { findSource } from "./lifecycle.js";
import { decodeCursor, encodeCursor, intParam, type Query } from "./paging.js";
import type { RunRecord, SimState, SourceRecord } from "./state.js";
import { sourceHash } from "./summary.js";

export const TRANSCRIPT_DEFAULT_LIMIT = 50;
export const TRANSCRIPT_MAX_LIMIT = 100;

interface Message {
  sequence_number: number;
  role: "user" | "assistant" | "tool";
  message_type: "text" | "tool_call" | "tool_result" | "error";
  content: string;
  created_at: string;
}

export function transcriptPage(state: SimState, run: RunRecord, query: Query) {
  const label = query.source;
  let source: SourceRecord | undefined;
  if (label !== undefined && label !== "") source = findSource(run, label);
  else if (run.sources.length === 1) source = run.sources[0];
  if (!source) {
    const labels = run.sources.map((s) => s.label).join(", ");
    throw new HttpError(400, `source is required: this run has several sources (${labels})`);
  }
  const limit = intParam(query, "limit", TRANSCRIPT_DEFAULT_LIMIT, 1, TRANSCRIPT_MAX_LIMIT);
  const after = decodeCursor(
    query.cursor,
    (v): v is { n: number } => typeof (v as { n?: unknown })?.n === "number",
  );
  const all = messagesOf(state, run, source);
  const from = after?.n ?? 0;
  const messages = all.slice(from, from + limit);
  const hasMore = from + limit < all.length;
  return {
    task_id: source.taskId,
    status: source.status,
    messages,
    next_cursor: hasMore ? encodeCursor({ n: from + limit }) : null,
    has_more: hasMore,
  };
}

/** The conversation so far: one round per attempt (the first, then one per continue message). */
function messagesOf(state: SimState, run: RunRecord, source: SourceRecord): Message[] {
  if (source.status === "PENDING") return [];
  const startMs = source.startedAtMs ?? run.createdAtMs;
  const messages: Message[] = [];
  const add = (role: Message["role"], type: Message["message_type"], content: string) =>
    messages.push({
      sequence_number: messages.length + 1,
      role,
      message_type: type,
      content,
      created_at: formatOffsetIso(startMs + messages.length * 1000),
    });
  const tool = `${source.server.source_type}-search`;
  const toolCalls = 2 + (sourceHash(state, source) % 8);
  add("user", "text", run.instructions);
  add("assistant", "text", `I'll start by searching ${source.server.server_name}.`);
  const rounds = source.continues.length + 1;
  for (let round = 0; round < rounds; round++) {
    const last = round === rounds - 1;
    if (last && source.status === "RUNNING") break;
    for (let i = 0; i < toolCalls; i++) {
      add("assistant", "tool_call", JSON.stringify({ tool, arguments: { query: `page ${i + 1}` } }));
      add("tool", "tool_result", `Found ${3 + ((i * 7) % 11)} results.`);
    }
    if (!last) {
      add("assistant", "text", "I stopped early: out of iterations.");
      add("user", "text", source.continues[round]?.message ?? "");
    } else if (source.status === "FAILED") {
      add("assistant", "error", source.error ?? "failed");
    } else if (source.status === "INCOMPLETE") {
      add("assistant", "text", "I stopped early: out of iterations.");
    } else {
      add("assistant", "text", `Done: included ${source.snapshot?.included ?? 0} resources.`);
    }
  }
  return messages;
}
