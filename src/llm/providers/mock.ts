import { XMLParser } from 'fast-xml-parser';
import { Errors } from '../../errors/catalogue.js';
import type { CompletionRequest, ProviderResponse } from '../types.js';
import { ConfiguredProvider } from './configured.js';

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: false, processEntities: true });
const LAST_MESSAGE = /<message\b[^>]*>([\s\S]*?)<\/message>\s*$/;
const PLACEHOLDER = /\{\{\s*([\w.-]+)\s*(?:\|\s*(upper|lower)\s*)?\}\}/g;

/** Rough token count (about four characters a token), the usual rule of thumb. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Offline and deterministic. Each agent's calls use its scripted templates in turn (turn = the
 * number of assistant turns in the request; the templates start again after the last), with
 * `{{field}}` / `{{field|upper}}` filled from the payload being handled. An agent without a
 * script gets a derived reply that acknowledges its input and ends its branch.
 */
export class MockProvider extends ConfiguredProvider {
  readonly type = 'mock' as const;

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse> {
    const latency = this.config.mockLatencyMs ?? 0;
    if (latency > 0) await delay(latency, signal);
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    const fields = lastPayloadFields(request);
    const script = request.agent ? this.config.script[request.agent] : undefined;
    const turn = request.messages.filter((m) => m.role === 'assistant').length;
    const content =
      script && script.length > 0
        ? fill(script[turn % script.length]!, fields)
        : `Noted ${Object.keys(fields).length} field(s): ${escapeXml(Object.values(fields).join(', ').slice(0, 200))}\n<done/>`;
    const promptTokens = estimateTokens(request.system) + request.messages.reduce((n, m) => n + estimateTokens(m.content), 0);
    const completionTokens = Math.min(estimateTokens(content), request.maxOutputTokens);
    return {
      content,
      model: request.model,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null },
    };
  }
}

/** Top-level fields of the payload in the last user message, as strings. */
function lastPayloadFields(request: CompletionRequest): Record<string, string> {
  const last = [...request.messages].reverse().find((m) => m.role === 'user');
  const inner = last ? LAST_MESSAGE.exec(last.content)?.[1] : undefined;
  if (!inner) return {};
  try {
    const doc = parser.parse(inner) as Record<string, unknown>;
    const root = Object.values(doc)[0];
    if (!root || typeof root !== 'object') return {};
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(root as Record<string, unknown>)) out[k] = typeof v === 'object' ? JSON.stringify(v) : String(v);
    return out;
  } catch {
    return {};
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

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(Errors.ABORTED(String(signal.reason ?? 'aborted')));
      },
      { once: true },
    );
  });
}
