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

type Draft = Omit<Message, "sequence_number" | "created_at">;

/**
 * The conversation so far: one round per attempt (the first, then one per continue message), each
 * stamped within its attempt: from its start (or the continue) to its finish, or to now while it
 * runs, so no message is written after its source finished or in the future.
 */
function messagesOf(state: SimState, run: RunRecord, source: SourceRecord): Message[] {
  if (source.status === "PENDING") return [];
  const tool = `${source.server.source_type}-search`;
  const toolCalls = 2 + (sourceHash(state, source) % 8);
  const messages: Message[] = [];
  for (let round = 0; round <= source.continues.length; round++) {
    const resumedBy = source.continues[round - 1];
    const stoppedFor = source.continues[round];
    const fromMs = resumedBy?.atMs ?? source.startedAtMs ?? run.createdAtMs;
    const finishedMs = stoppedFor?.finishedAtMs ?? source.completedAtMs;
    const opening: Draft[] = resumedBy
      ? [{ role: "user", message_type: "text", content: resumedBy.message }]
      : [
          { role: "user", message_type: "text", content: run.instructions },
          {
            role: "assistant",
            message_type: "text",
            content: `I'll start by searching ${source.server.server_name}.`,
          },
        ];
    const work: Draft[] = [];
    if (finishedMs !== null) {
      for (let i = 0; i < toolCalls; i++) {
        const call = JSON.stringify({ tool, arguments: { query: `page ${i + 1}` } });
        work.push({ role: "assistant", message_type: "tool_call", content: call });
        work.push({
          role: "tool",
          message_type: "tool_result",
          content: `Found ${3 + ((i * 7) % 11)} results.`,
        });
      }
      work.push(closingMessage(source, stoppedFor !== undefined));
    }
    const stamps = roundStamps(opening.length, work.length, fromMs, finishedMs ?? state.clock.nowMs());
    for (const [i, draft] of [...opening, ...work].entries()) {
      messages.push({
        sequence_number: messages.length + 1,
        ...draft,
        created_at: formatOffsetIso(stamps[i] ?? fromMs),
      });
    }
  }
  return messages;
}

function closingMessage(source: SourceRecord, continued: boolean): Draft {
  if (!continued && source.status === "FAILED")
    return { role: "assistant", message_type: "error", content: source.error ?? "failed" };
  if (continued || source.status === "INCOMPLETE")
    return { role: "assistant", message_type: "text", content: "I stopped early: out of iterations." };
  const included = source.snapshot?.included ?? 0;
  return { role: "assistant", message_type: "text", content: `Done: included ${included} resources.` };
}

/**
 * Times for one round within [fromMs, toMs]. The opening messages come a millisecond apart from the
 * round's start, so they read the same while it runs and after; the work is spread evenly up to
 * the finish, the closing message at the finish itself. Distinct whenever the span allows.
 */
function roundStamps(opening: number, work: number, fromMs: number, toMs: number): number[] {
  const stamps = Array.from({ length: opening }, (_, i) => Math.min(fromMs + i, toMs));
  const lastOpeningMs = stamps[opening - 1] ?? fromMs;
  for (let j = 1; j <= work; j++)
    stamps.push(lastOpeningMs + Math.round(((toMs - lastOpeningMs) * j) / work));
  return stamps;
}
