import type { JournalEntry } from '../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import type { Message } from '../core/message.js';
import type { ThreadRecord } from '../core/thread.js';
import { forkedFromOf } from './fork.js';

/** The cassette format's version: a reader refuses a version it does not know. */
export const CASSETTE_VERSION = 1;

/**
 * A thread as a cassette (time travel, docs/time-travel.md): its messages in order and its
 * recorded LLM and tool calls, as recorded (prompts and answers subject to `llm.record`). Never
 * a secret: records hold request bodies, never headers or keys; messages hold payloads and the
 * thread's metadata.
 */
export interface Cassette {
  readonly format: 'organism.cassette';
  readonly version: number;
  readonly organism: string;
  readonly exportedAt: number;
  readonly thread: {
    readonly id: string;
    readonly status: string;
    readonly createdAt: number;
    readonly lastActivity: number;
    readonly forkedFrom: { readonly threadId: string; readonly messageId: string } | null;
  };
  readonly messages: ReadonlyArray<Pick<Message, 'id' | 'from' | 'to' | 'payloadType' | 'payload' | 'parentId' | 'hops' | 'timestamp'> & { readonly state: string }>;
  readonly llmCalls: readonly LlmCallRecord[];
  readonly toolCalls: readonly ToolCallRecord[];
}

export function cassetteOf(organism: string, thread: ThreadRecord, entries: readonly JournalEntry[], calls: readonly LlmCallRecord[], tools: readonly ToolCallRecord[]): Cassette {
  return {
    format: 'organism.cassette',
    version: CASSETTE_VERSION,
    organism,
    exportedAt: Date.now(),
    thread: { id: thread.id, status: thread.status, createdAt: thread.createdAt, lastActivity: thread.lastActivity, forkedFrom: forkedFromOf(thread.metadata) },
    messages: entries.map(({ message: m, state }) => ({
      id: m.id,
      from: m.from,
      to: m.to,
      payloadType: m.payloadType,
      payload: m.payload,
      parentId: m.parentId,
      hops: m.hops,
      timestamp: m.timestamp,
      state,
    })),
    llmCalls: [...calls],
    toolCalls: [...tools],
  };
}
