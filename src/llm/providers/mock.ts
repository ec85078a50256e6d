import { XMLParser } from 'fast-xml-parser';
import type { MockStep } from '../../config/types.js';
import { Errors } from '../../errors/catalogue.js';
import { abortableSleep } from '../retry.js';
import { estimatePromptTokens, estimateTokens } from '../tokens.js';
import { peerToolName, REPLY_TOOL } from '../tool-names.js';
import type { CallObserver, CompletionRequest, ProviderResponse, ToolCall, ToolSpec } from '../types.js';
import { ConfiguredProvider } from './configured.js';

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, processEntities: true });
const MESSAGE_OPEN = /<message\b[^>]*>/g;
const PLACEHOLDER = /\{\{\s*([\w.-]+)\s*(?:\|\s*(upper|lower)\s*)?\}\}/g;
const ENVELOPE = /<(send|reply)\b([^>]*)>([\s\S]*?)<\/\1\s*>/g;
const TO_ATTR = /\bto\s*=\s*(?:"([^"]*)"|'([^']*)')/;

/**
 * Offline and deterministic. Each agent's calls use its scripted steps in turn (turn N = the
 * N-th time the agent answers in the thread, tool rounds of earlier deliveries included; the
 * last step repeats from then on), with
 * `{{field}}` / `{{field|upper}}` filled from the payload being handled. An agent without a
 * script gets a derived reply that acknowledges its input and ends its branch.
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
    const fields = lastFields(request);
    const script = request.agent ? this.config.script[request.agent] : undefined;
    // The request's assistant turns alone undercount: a delivery's tool rounds (and answers that
    // sent nothing) leave no trace in the history of the next delivery. They are the floor when
    // this provider has not seen the thread (a restart, another worker).
    const turn = Math.max(request.messages.filter((m) => m.role === 'assistant').length, this.answered.get(request.threadId, request.agent));
    const step: MockStep =
      script && script.length > 0
        ? script[Math.min(turn, script.length - 1)]!
        : `Noted ${Object.keys(fields).length} field(s): ${escapeXml(Object.values(fields).join(', ').slice(0, 200))}\n<done/>`;
    const tools = request.tools ?? [];
    const answer = typeof step === 'string' ? fromText(fill(step, fields, escapeXml), tools) : fromCalls(step, fields);
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

/** A text step: as it is without tools; with tools, its XML envelopes become tool calls. */
function fromText(text: string, tools: readonly ToolSpec[]): { content: string; toolCalls: ToolCall[] } {
  if (tools.length === 0) return { content: text, toolCalls: [] };
  const toolCalls: ToolCall[] = [];
  for (const match of text.matchAll(ENVELOPE)) {
    const [, kind, attrs = '', inner = ''] = match;
    const to = TO_ATTR.exec(attrs);
    const name = kind === 'reply' ? REPLY_TOOL : peerToolName(to?.[1] ?? to?.[2] ?? '');
    const tool = tools.find((t) => t.name === name);
    toolCalls.push({ id: `call_mock_${toolCalls.length + 1}`, name, arguments: JSON.stringify(argumentsFromXml(inner, tool?.parameters ?? {})) });
  }
  const rest = text
    .replace(ENVELOPE, '')
    .replace(/<done\s*\/>|<done>\s*<\/done>/g, '')
    .trim();
  return { content: rest, toolCalls };
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

/**
 * A payload element (`<Findings><topic>..</topic></Findings>`) as the JSON the tool's schema
 * describes: numbers and booleans converted, `<item>` lists as arrays, nested types via `$defs`.
 */
function argumentsFromXml(xml: string, schema: Record<string, unknown>): unknown {
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(xml.trim()) as Record<string, unknown>;
  } catch {
    return {};
  }
  const root = Object.values(doc)[0];
  const defs = (schema['$defs'] ?? {}) as Record<string, Record<string, unknown>>;
  const props = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>;
  // The free reply tool takes {payloadType, payload}: the element's name is the type.
  if (props['payloadType'] && props['payload']) return { payloadType: Object.keys(doc)[0] ?? '', payload: coerce(root, {}, defs) };
  // A target of several types takes {"<Type>": {...}}: one property per type, the element's name picks it.
  const tag = Object.keys(doc)[0] ?? '';
  if (schema['maxProperties'] === 1 && props[tag]) return { [tag]: coerce(root, props[tag], defs) };
  return coerce(root, schema, defs);
}

function coerce(value: unknown, schema: Record<string, unknown>, defs: Record<string, Record<string, unknown>>): unknown {
  const ref = schema['$ref'];
  if (typeof ref === 'string') return coerce(value, defs[ref.replace('#/$defs/', '')] ?? {}, defs);
  const type = Array.isArray(schema['type']) ? (schema['type'] as unknown[])[0] : schema['type'];
  if (type === 'array') {
    const items = value && typeof value === 'object' ? (value as Record<string, unknown>)['item'] : undefined;
    const list = items === undefined ? [] : Array.isArray(items) ? items : [items];
    return list.map((v) => coerce(v, (schema['items'] ?? {}) as Record<string, unknown>, defs));
  }
  if (type === 'integer' || type === 'number') return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  if (type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const props = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      // Indentation between child elements is no field.
      if (k === '#text' && typeof v === 'string' && v.trim() === '') continue;
      out[k] = coerce(v, props[k] ?? {}, defs);
    }
    return out;
  }
  if (type === 'object' && value === '') return {};
  return value;
}

/**
 * Fields to fill templates from: the top-level fields of the latest incoming payload (the
 * agent wraps each in `<message from="...">...</message>`, as XML or JSON; a user turn without
 * the wrapper is read as a bare payload), plus `result`: the latest tool result's text.
 */
function lastFields(request: CompletionRequest): Record<string, string> {
  let result: string | null = null;
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]!;
    if (m.role === 'tool') {
      result ??= m.content;
      continue;
    }
    if (m.role !== 'user') continue;
    const fields = payloadFields(lastWrapped(m.content) ?? m.content);
    if (fields) return result === null ? fields : { ...fields, result };
  }
  return result === null ? {} : { result };
}

/** The inside of the last `<message ...>...</message>` in `text`, or null. */
function lastWrapped(text: string): string | null {
  let start = -1;
  for (const match of text.matchAll(MESSAGE_OPEN)) start = match.index + match[0].length;
  if (start < 0) return null;
  const end = text.indexOf('</message>', start);
  return end < 0 ? null : text.slice(start, end);
}

function payloadFields(text: string): Record<string, string> | null {
  const json = jsonObject(text);
  const root = json ?? xmlRoot(text);
  if (!root) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(root)) out[k] = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return out;
}

function jsonObject(text: string): Record<string, unknown> | null {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return null;
  try {
    const v = JSON.parse(trimmed) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function xmlRoot(xml: string): Record<string, unknown> | null {
  try {
    const doc = parser.parse(xml) as Record<string, unknown>;
    const roots = Object.values(doc);
    const root = roots[roots.length - 1];
    return root && typeof root === 'object' ? (root as Record<string, unknown>) : null;
  } catch {
    return null;
  }
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

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
