import { readFileSync } from 'node:fs';
import type { LlmCallRecord } from '../core/llm.js';
import { requestHash } from '../llm/request-hash.js';
import { NO_USAGE, type CompletionRequest, type LlmProvider, type ProviderResponse } from '../llm/types.js';
import { createTestOrganism, type TestConfig } from './organism.js';

/** What `replayCassette` concludes (docs/time-travel.md). */
export type CassetteVerdict = 'identical' | 'changed' | 'regression';

/** One cassette replayed: its verdict, and what differed from the record. */
export interface CassetteReplay {
  readonly verdict: CassetteVerdict;
  /** The cassette's thread. */
  readonly threadId: string;
  /** What differs, one line each (empty when identical). */
  readonly differences: readonly string[];
}

interface CassetteFile {
  readonly format?: string;
  readonly version?: number;
  readonly messages?: ReadonlyArray<{ from: string; to: string; payloadType: string; payload: Record<string, unknown>; state: string }>;
  readonly llmCalls?: readonly LlmCallRecord[];
  readonly thread?: { id: string; status: string };
}

/**
 * Replays a cassette (`GET /threads/{id}/export`) offline, in process, never calling a
 * provider: each agent's LLM calls are answered with its recorded answers in order, which the
 * agents then validate under `config`. The verdict: `identical` (every request matched its
 * record's hash and the same messages flowed), `changed` (requests differ, but every recorded
 * answer was used and still validated, and the same messages flowed between the same listeners),
 * or `regression` (a message missing or new, a new failure, an answer no longer valid, a
 * recorded answer missing).
 */
export async function replayCassette(cassettePath: string, options: { readonly config: TestConfig; readonly timeoutMs?: number }): Promise<CassetteReplay> {
  const cassette = JSON.parse(readFileSync(cassettePath, 'utf8')) as CassetteFile;
  if (cassette.format !== 'organism.cassette' || cassette.version !== 1 || !cassette.messages || !cassette.llmCalls || !cassette.thread) {
    throw new Error(`${cassettePath}: not an organism cassette of version 1 (GET /api/v1/threads/{id}/export writes one)`);
  }
  const root = cassette.messages[0];
  if (!root) throw new Error(`${cassettePath}: the cassette has no message`);
  const llm = new CassetteLlm(cassette.llmCalls);
  const org = await createTestOrganism({ config: options.config, llm, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) });
  try {
    const thread = await (await org.inject(root.to, { [root.payloadType]: root.payload }, { from: root.from })).settled();
    const differences: string[] = [];
    const flow = (m: { from: string; to: string; payloadType: string }) => `${m.from} -> ${m.to} (${m.payloadType})`;
    const before = cassette.messages.map(flow);
    const after = thread.messages.map(flow);
    for (let i = 0; i < Math.max(before.length, after.length); i++) {
      if (before[i] !== after[i]) differences.push(`message ${i + 1}: recorded ${before[i] ?? '(none)'}, replayed ${after[i] ?? '(none)'}`);
    }
    const failedBefore = cassette.messages.filter((m) => m.state === 'FAILED').length;
    const failedAfter = thread.messages.filter((m) => m.state === 'FAILED').length;
    if (failedAfter > failedBefore) differences.push(`${failedAfter - failedBefore} new failed deliver${failedAfter - failedBefore === 1 ? 'y' : 'ies'}: ${thread.error ?? ''}`.trim());
    if (cassette.thread.status !== thread.status) differences.push(`thread ${cassette.thread.status} when recorded, ${thread.status} when replayed`);
    for (const m of llm.missing) differences.push(`no recorded answer left for ${m}`);
    const regression = differences.length > 0;
    for (const c of llm.changed) differences.push(`the request of ${c.agent}'s call ${c.index + 1} differs from its record`);
    return { verdict: regression ? 'regression' : llm.changed.length > 0 ? 'changed' : 'identical', threadId: cassette.thread.id, differences };
  } finally {
    await org.close();
  }
}

/** Answers each agent's calls with its recorded answers, in order, and notes requests that no longer hash as recorded. */
class CassetteLlm implements LlmProvider {
  readonly name = 'cassette';
  readonly type = 'mock' as const;
  readonly priority = 0;
  readonly maxRetries = 0;
  readonly missing: string[] = [];
  readonly changed: Array<{ agent: string; index: number }> = [];
  private readonly queues = new Map<string, LlmCallRecord[]>();
  private readonly asked = new Map<string, number>();

  constructor(calls: readonly LlmCallRecord[]) {
    for (const c of calls) {
      if (c.error !== null || !c.response || c.response.text === null) continue;
      this.queues.set(c.agent, [...(this.queues.get(c.agent) ?? []), c]);
    }
  }

  serves(): boolean {
    return true;
  }

  async complete(request: CompletionRequest): Promise<ProviderResponse> {
    const agent = request.agent ?? '';
    const index = this.asked.get(agent) ?? 0;
    this.asked.set(agent, index + 1);
    const recorded = this.queues.get(agent)?.[index];
    if (!recorded?.response) {
      this.missing.push(`${agent} (call ${index + 1})`);
      throw new Error(`the cassette has no recorded answer for ${agent}'s call ${index + 1}`);
    }
    if (recorded.requestHash !== requestHash(agent, request)) this.changed.push({ agent, index });
    return {
      content: recorded.response.text ?? '',
      toolCalls: recorded.response.toolCalls.map((t) => ({ id: t.id, name: t.name, arguments: t.arguments ?? '' })),
      finishReason: recorded.response.finishReason,
      model: recorded.responseModel ?? recorded.model,
      usage: recorded.usage ?? NO_USAGE,
    };
  }
}
