import type { LlmCallRecord, ToolCallRecord } from '../../llm/call-record.js';
import type { LlmCallStore, RecordedCalls } from '../../core/storage.js';
import { erasedCall, erasedTool } from '../erasure.js';

/**
 * LLM and tool calls in memory, bounded: past `max` calls the oldest go (with their tool
 * calls), as the in-memory journal forgets its oldest entries.
 */
export class MemoryLlmCallStore implements LlmCallStore {
  private readonly calls = new Map<string, LlmCallRecord>();
  private readonly tools = new Map<string, ToolCallRecord[]>();

  constructor(private readonly max = 10_000) {}

  recordCall(record: LlmCallRecord): void {
    this.calls.set(record.id, record);
    while (this.calls.size > this.max) {
      const oldest = this.calls.keys().next().value as string;
      this.calls.delete(oldest);
      this.tools.delete(oldest);
    }
  }

  recordTool(record: ToolCallRecord): void {
    const list = this.tools.get(record.llmCallId) ?? [];
    list.push(record);
    this.tools.set(record.llmCallId, list);
  }

  async forMessage(messageId: string): Promise<RecordedCalls> {
    const calls = [...this.calls.values()].filter((c) => c.messageId === messageId);
    return { calls, tools: this.toolsOf(calls), total: calls.length };
  }

  async forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    const all = [...this.calls.values()].filter((c) => c.threadId === threadId);
    const calls = all.slice(page.offset, page.offset + page.limit);
    return { calls, tools: this.toolsOf(calls), total: all.length };
  }

  async forAgent(agent: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    // Latest recorded first among equal start times, as the SQL stores order them.
    const all = [...this.calls.values()]
      .filter((c) => c.agent === agent)
      .reverse()
      .sort((a, b) => b.startedAt - a.startedAt);
    const calls = all.slice(page.offset, page.offset + page.limit);
    return { calls, tools: this.toolsOf(calls), total: all.length };
  }

  /** Erasure (issue 30): the thread's calls and tool calls with their text as tombstones. How many of each. */
  eraseThread(threadId: string): { calls: number; tools: number } {
    let calls = 0;
    let tools = 0;
    for (const [id, c] of this.calls) {
      if (c.threadId !== threadId) continue;
      this.calls.set(id, erasedCall(c));
      calls++;
      const list = this.tools.get(id);
      if (list) {
        this.tools.set(id, list.map(erasedTool));
        tools += list.length;
      }
    }
    return { calls, tools };
  }

  async hashed(threadId: string, limit: number): Promise<LlmCallRecord[]> {
    return [...this.calls.values()].filter((c) => c.threadId === threadId && c.requestHash !== undefined).slice(0, limit);
  }

  private toolsOf(calls: readonly LlmCallRecord[]): ToolCallRecord[] {
    return calls.flatMap((c) => this.tools.get(c.id) ?? []);
  }
}
