import { XMLParser } from 'fast-xml-parser';
import { Errors } from '../../errors/catalogue.js';
import { abortableSleep } from '../retry.js';
import { estimatePromptTokens, estimateTokens } from '../tokens.js';
import type { CompletionRequest, ProviderResponse } from '../types.js';
import { ConfiguredProvider } from './configured.js';

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, processEntities: true });
const MESSAGE_OPEN = /<message\b[^>]*>/g;
const PLACEHOLDER = /\{\{\s*([\w.-]+)\s*(?:\|\s*(upper|lower)\s*)?\}\}/g;

/**
 * Offline and deterministic. Each agent's calls use its scripted templates in turn (turn = the
 * number of assistant turns in the request; the last template repeats from then on), with
 * `{{field}}` / `{{field|upper}}` filled from the payload being handled. An agent without a
 * script gets a derived reply that acknowledges its input and ends its branch.
 */
export class MockProvider extends ConfiguredProvider {
  readonly type = 'mock' as const;

  private readonly nextLatency = latencySequence(this.config.mockLatencyMs ?? 0, this.config.mockLatencyMaxMs, this.config.mockLatencySeed ?? 1);

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse> {
    const latency = this.nextLatency();
    if (latency > 0) await abortableSleep(latency, signal);
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    const fields = lastPayloadFields(request);
    const script = request.agent ? this.config.script[request.agent] : undefined;
    const turn = request.messages.filter((m) => m.role === 'assistant').length;
    const content =
      script && script.length > 0
        ? fill(script[Math.min(turn, script.length - 1)]!, fields)
        : `Noted ${Object.keys(fields).length} field(s): ${escapeXml(Object.values(fields).join(', ').slice(0, 200))}\n<done/>`;
    const promptTokens = estimatePromptTokens(request);
    const completionTokens = Math.min(estimateTokens(content), request.maxOutputTokens);
    return {
      content,
      model: request.model,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null },
    };
  }
}

/**
 * Top-level fields of the latest incoming payload, as strings. The agent wraps each incoming
 * payload in `<message from="...">...</message>` (several may share one user turn: the last
 * counts); a user turn without that wrapper is read as a bare XML payload. User turns with no
 * payload at all (e.g. a repair request) are skipped.
 */
function lastPayloadFields(request: CompletionRequest): Record<string, string> {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]!;
    if (m.role !== 'user') continue;
    const fields = payloadFields(lastWrapped(m.content) ?? m.content);
    if (fields) return fields;
  }
  return {};
}

/** The inside of the last `<message ...>...</message>` in `text`, or null. */
function lastWrapped(text: string): string | null {
  let start = -1;
  for (const match of text.matchAll(MESSAGE_OPEN)) start = match.index + match[0].length;
  if (start < 0) return null;
  const end = text.indexOf('</message>', start);
  return end < 0 ? null : text.slice(start, end);
}

function payloadFields(xml: string): Record<string, string> | null {
  try {
    const doc = parser.parse(xml) as Record<string, unknown>;
    const roots = Object.values(doc);
    const root = roots[roots.length - 1];
    if (!root || typeof root !== 'object') return null;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(root as Record<string, unknown>)) out[k] = typeof v === 'object' ? JSON.stringify(v) : String(v);
    return out;
  } catch {
    return null;
  }
}

function fill(template: string, fields: Record<string, string>): string {
  return template.replace(PLACEHOLDER, (_, name: string, filter?: string) => {
    let value = fields[name] ?? '';
    if (filter === 'upper') value = value.toUpperCase();
    if (filter === 'lower') value = value.toLowerCase();
    return escapeXml(value);
  });
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
