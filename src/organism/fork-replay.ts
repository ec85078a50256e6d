import type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import { canonicalJson } from '../llm/request-hash.js';
import type { LlmCallStore } from '../core/storage.js';
import type { CallContext, ReplaySource } from '../llm/router.js';

/** Thread metadata of a fork (issue 29): the thread and the message it was forked from. */
export const FORKED_FROM_THREAD = 'organism.forkedFrom.thread';
export const FORKED_FROM_MESSAGE = 'organism.forkedFrom.message';
/** `live`: the source's calls were not recorded in full (llm.record metadata or off), so the fork calls providers from its first call. */
export const FORK_MODE = 'organism.fork.mode';

/** The most calls of a source thread a fork replays from. */
export const MAX_REPLAYED_CALLS = 10_000;
/** Forks whose replay state is kept (the oldest is forgotten, and rebuilt from the store if asked again). */
const MAX_FORKS = 1_000;
/** Replayed calls remembered for their tool calls (the newest; a tool call follows its LLM call at once). */
const MAX_REMEMBERED_CALLS = 10_000;

interface ForkState {
  /** The source's answerable calls by agent and request hash, oldest first. */
  readonly recorded: Map<string, LlmCallRecord[]>;
  /** How many of each were used by this fork (in this process). */
  readonly used: Map<string, number>;
  /** A call of the fork went to a provider: the fork is live from there. */
  live: boolean;
}

/** Whether a recorded call can answer a request: it succeeded and its answer was recorded (llm.record: full). */
export function answerable(c: LlmCallRecord): boolean {
  return c.error === null && c.requestHash !== undefined && c.response !== null && c.response.text !== null && c.response.toolCalls.every((t) => t.arguments !== null);
}

/**
 * Answers a fork's LLM calls from the record of the thread it was forked from: while each
 * request hashes as a recorded successful call of the same agent did, that call answers; the
 * first that matches none goes to a provider and the fork is live from then on. The record is
 * the store's: after a crash the state is rebuilt from it (a fork that had a live call stays live).
 */
export class ForkReplay implements ReplaySource {
  private readonly forks = new Map<string, Promise<ForkState>>();
  /** A fork's replayed call -> the source's call that answered it (for `replay: recorded` tools; a rerun after a crash replays the call again, filling it again). */
  private readonly answeredBy = new Map<string, LlmCallRecord>();
  /** The source's tool records already reused per fork call (a call asking twice for the same thing takes them in turn). */
  private readonly usedTools = new Map<string, Set<string>>();

  constructor(private readonly calls: LlmCallStore) {}

  replays(call: CallContext): boolean {
    return call.metadata[FORKED_FROM_THREAD] !== undefined && call.metadata[FORK_MODE] !== 'live';
  }

  async answer(call: CallContext, requestHash: string): Promise<LlmCallRecord | null> {
    const source = call.metadata[FORKED_FROM_THREAD];
    if (source === undefined) return null;
    const state = await this.state(call.threadId, source);
    if (state.live) return null;
    const key = `${call.agent}\u0000${requestHash}`;
    const list = state.recorded.get(key);
    if (!list || list.length === 0) {
      state.live = true;
      return null;
    }
    const used = state.used.get(key) ?? 0;
    state.used.set(key, used + 1);
    return list[Math.min(used, list.length - 1)]!;
  }

  answered(callId: string, recorded: LlmCallRecord): void {
    this.answeredBy.set(callId, recorded);
    if (this.answeredBy.size > MAX_REMEMBERED_CALLS) this.answeredBy.delete(this.answeredBy.keys().next().value as string);
  }

  /**
   * The source's recorded result of this tool call (listener `replay: recorded`): the fork's LLM
   * call `llmCallId` was answered from the record, and the source's call it replayed asked for
   * the same tool with the same arguments, recorded in full. Null: run it.
   */
  async recordedTool(call: { llmCallId: string; kind: 'mcp' | 'code'; server: string; tool: string; arguments: unknown }): Promise<ToolCallRecord | null> {
    const source = this.answeredBy.get(call.llmCallId);
    if (!source?.messageId) return null;
    const args = canonicalJson(call.arguments);
    const { tools } = await this.calls.forMessage(source.messageId);
    const used = this.usedTools.get(call.llmCallId) ?? new Set<string>();
    const match = tools.find(
      (t) =>
        t.llmCallId === source.id &&
        !used.has(t.id) &&
        (t.kind ?? 'mcp') === call.kind &&
        t.server === call.server &&
        t.tool === call.tool &&
        t.arguments !== null &&
        canonicalJson(t.arguments) === args &&
        (t.result !== null || t.error !== null),
    );
    if (!match) return null;
    used.add(match.id);
    this.usedTools.set(call.llmCallId, used);
    if (this.usedTools.size > MAX_REMEMBERED_CALLS) this.usedTools.delete(this.usedTools.keys().next().value as string);
    return match;
  }

  private state(fork: string, source: string): Promise<ForkState> {
    let state = this.forks.get(fork);
    if (!state) {
      state = this.load(fork, source);
      state.catch(() => this.forks.delete(fork));
      this.forks.set(fork, state);
      if (this.forks.size > MAX_FORKS) this.forks.delete(this.forks.keys().next().value as string);
    }
    return state;
  }

  private async load(fork: string, source: string): Promise<ForkState> {
    const [theirs, own] = await Promise.all([this.calls.hashed(source, MAX_REPLAYED_CALLS), this.calls.hashed(fork, MAX_REPLAYED_CALLS)]);
    const recorded = new Map<string, LlmCallRecord[]>();
    for (const c of theirs) {
      if (!answerable(c)) continue;
      const key = `${c.agent}\u0000${c.requestHash}`;
      const list = recorded.get(key) ?? [];
      list.push(c);
      recorded.set(key, list);
    }
    // A provider answered one of the fork's calls before a restart: it had gone live.
    const live = own.some((c) => c.replayed !== true);
    return { recorded, used: new Map(), live };
  }
}
