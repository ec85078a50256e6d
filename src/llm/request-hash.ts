import { createHash } from 'node:crypto';
import type { CompletionRequest } from './types.js';

/**
 * The hash of an LLM request as it was sent (time travel, issue 29): sha256 of the canonical
 * JSON of the agent, the model, the output cap, the system prompt, the messages and the tools
 * offered (name, description, parameters). Computed before `llm.record` drops or redacts
 * anything, and kept with the call record, so a fork can tell "this agent receives exactly what
 * it received then" without the recorded prompt.
 *
 * Tool call ids are opaque correlation tokens (some are made from message ids, which a fork
 * renews): they are replaced by their order of first appearance (`#1`, `#2`, ...).
 */
export function requestHash(agent: string, request: Pick<CompletionRequest, 'model' | 'system' | 'messages' | 'maxOutputTokens' | 'tools'>): string {
  const ids = new Map<string, string>();
  const id = (raw: string) => {
    let short = ids.get(raw);
    if (!short) {
      short = `#${ids.size + 1}`;
      ids.set(raw, short);
    }
    return short;
  };
  const messages = request.messages.map((m) => {
    if (m.role === 'tool') return { role: m.role, toolCallId: id(m.toolCallId), name: m.name, content: m.content, isError: m.isError ?? false };
    if (m.role === 'assistant') return { role: m.role, content: m.content, toolCalls: (m.toolCalls ?? []).map((c) => ({ id: id(c.id), name: c.name, arguments: c.arguments })) };
    return { role: m.role, content: m.content };
  });
  const tools = (request.tools ?? []).map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  const canonical = canonicalJson({ agent, model: request.model, maxOutputTokens: request.maxOutputTokens, system: request.system, messages, tools });
  return createHash('sha256').update(canonical).digest('hex');
}

/** JSON with object keys sorted at every level (arrays keep their order); undefined members are left out. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
