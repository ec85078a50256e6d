import type { MockStep } from '../../config/types.js';
import { Errors } from '../../errors/catalogue.js';
import { abortableSleep } from '../retry.js';
import { estimatePromptTokens, estimateTokens } from '../tokens.js';
import type { CallObserver, CompletionRequest, ProviderResponse, ToolCall } from '../types.js';
import { ConfiguredProvider } from './configured.js';
import { stepsFor } from './mock-match.js';
import { answerFromText, escapeXml, incomingMessage, templateFields } from './scripted-reply.js';

const PLACEHOLDER = /\{\{\s*([\w.-]+)\s*(?:\|\s*(upper|lower)\s*)?\}\}/g;

/**
 * Offline and deterministic. Each agent's calls use its scripted steps in turn (turn N = the
 * N-th time the agent answers in the thread, tool rounds of earlier deliveries included; the
 * last step repeats from then on), with
 * `{{field}}` / `{{field|upper}}` filled from the payload being handled. A script of branches
 * (`{when, steps}`) takes the steps of the first branch whose `when` the payload being handled
 * matches (mock-match.ts). An agent without a script, or whose branches all miss, gets a derived
 * reply that acknowledges its input and ends its branch.
 *
 * When the request offers tools, a text step's `<send to="peer">` and `<reply>` elements
 * become calls of the agent's tools (payload XML read into JSON by the tool's schema), so one
 * script drives an agent in both reply formats; a `{calls: [...]}` step scripts tool calls as
 * they are (any name, any arguments, even malformed ones).
 */
export class MockProvider extends ConfiguredProvider {
  readonly type = 'mock' as const;

  private readonly nextLatency = latencySequence(this.config.mockLatencyMs ?? 0, this.config.mockLatencyMaxMs, this.config.mockLatencySeed ?? 1);
  private readonly answered = new AnswerCounts();

  async complete(request: CompletionRequest, signal: AbortSignal, observer: CallObserver = {}): Promise<ProviderResponse> {
    // Copies: the caller goes on adding turns to its arrays after the call.
    observer.onRequest?.({ model: request.model, system: request.system, messages: [...request.messages], tools: [...(request.tools ?? [])], max_tokens: request.maxOutputTokens });
    const latency = this.nextLatency();
    if (latency > 0) await abortableSleep(latency, signal);
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    const fields = templateFields(request);
    const script = request.agent ? this.config.script[request.agent] : undefined;
    // Branches (`when:`) are chosen by the payload being handled; the turn indexes the chosen steps.
    const steps = script ? stepsFor(script, incomingMessage(request.messages)?.payload ?? {}) : null;
    // The request's assistant turns alone undercount: a delivery's tool rounds (and answers that
    // sent nothing) leave no trace in the history of the next delivery. They are the floor when
    // this provider has not seen the thread (a restart, another worker).
    const turn = Math.max(request.messages.filter((m) => m.role === 'assistant').length, this.answered.get(request.threadId, request.agent));
    const step: MockStep =
      steps && steps.length > 0
        ? steps[Math.min(turn, steps.length - 1)]!
        : `Noted ${Object.keys(fields).length} field(s): ${escapeXml(Object.values(fields).join(', ').slice(0, 200))}\n<done/>`;
    const tools = request.tools ?? [];
    const answer = typeof step === 'string' ? answerFromText(fill(step, fields, escapeXml), tools) : fromCalls(step, fields);
    for (const piece of answer.content.match(/\S+\s*|\s+/g) ?? []) observer.onDelta?.(piece);
    const promptTokens = estimatePromptTokens(request);
    const written = answer.content + answer.toolCalls.map((c) => c.name + c.arguments).join('');
    const completionTokens = Math.min(estimateTokens(written), request.maxOutputTokens);
    const usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null };
    observer.onUsage?.(usage);
    this.answered.set(request.threadId, request.agent, turn + 1);
    return {
      ...answer,
      finishReason: answer.toolCalls.length > 0 ? 'tool_calls' : 'stop',
      model: request.model,
      usage,
    };
  }
}

/**
 * How many times each agent has answered in each thread, for the most recent threads (a bound
 * that keeps a long demo's memory flat; a forgotten thread falls back on its history's turns).
 */
class AnswerCounts {
  private static readonly MAX_THREADS = 10_000;
  private readonly counts = new Map<string, number>();

  get(threadId: string | undefined, agent: string | undefined): number {
    return threadId === undefined ? 0 : (this.counts.get(`${threadId}\0${agent ?? ''}`) ?? 0);
  }

  set(threadId: string | undefined, agent: string | undefined, answers: number): void {
    if (threadId === undefined) return;
    const key = `${threadId}\0${agent ?? ''}`;
    this.counts.delete(key); // re-inserted last: the oldest threads are forgotten first
    this.counts.set(key, answers);
    if (this.counts.size > AnswerCounts.MAX_THREADS) this.counts.delete(this.counts.keys().next().value!);
  }
}

/** A `{calls}` step: its calls as written (string arguments sent verbatim), templates filled. */
function fromCalls(step: Exclude<MockStep, string>, fields: Record<string, string>): { content: string; toolCalls: ToolCall[] } {
  return {
    content: fill(step.text ?? '', fields, (s) => s),
    toolCalls: step.calls.map((c, i) => ({
      id: `call_mock_${i + 1}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? fill(c.arguments, fields, (s) => s) : JSON.stringify(fillDeep(c.arguments ?? {}, fields)),
    })),
  };
}

function fill(template: string, fields: Record<string, string>, escapeValue: (s: string) => string): string {
  return template.replace(PLACEHOLDER, (_, name: string, filter?: string) => {
    let value = fields[name] ?? '';
    if (filter === 'upper') value = value.toUpperCase();
    if (filter === 'lower') value = value.toLowerCase();
    return escapeValue(value);
  });
}

function fillDeep(value: unknown, fields: Record<string, string>): unknown {
  if (typeof value === 'string') return fill(value, fields, (s) => s);
  if (Array.isArray(value)) return value.map((v) => fillDeep(v, fields));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v, fields)]));
  return value;
}

/**
 * The mock's response times: integers uniform in [min, max] from a seeded sequence (mulberry32,
 * a tiny well-mixed 32-bit generator), so the same config replays the same latencies.
 */
export function latencySequence(min: number, max: number | undefined, seed: number): () => number {
  const hi = Math.max(min, max ?? min);
  if (hi === min) return () => min;
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const unit = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return min + Math.floor(unit * (hi - min + 1));
  };
}
