import type { FrameMeta } from './frames.js';

/** A client's filter: each list narrows what it receives; absent or empty = everything. */
export interface WsFilter {
  readonly threads: readonly string[];
  readonly agents: readonly string[];
  readonly payloadTypes: readonly string[];
  readonly events: readonly string[];
}

export const NO_FILTER: WsFilter = { threads: [], agents: [], payloadTypes: [], events: [] };

function list(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const items = Array.isArray(v) ? v : [v];
  return items.filter((x): x is string => typeof x === 'string' && x.length > 0);
}

/** Reads a filter from a `subscribe` command or query parameters (camelCase or snake_case). */
export function parseFilter(source: Record<string, unknown>): WsFilter {
  return {
    threads: list(source['threads'] ?? source['thread']),
    agents: list(source['agents'] ?? source['agent']),
    payloadTypes: list(source['payloadTypes'] ?? source['payload_types'] ?? source['payloadType'] ?? source['payload_type']),
    events: list(source['events'] ?? source['event']),
  };
}

/**
 * The thread filter applies to every frame that concerns a thread; frames about no thread
 * (reload, organism status) pass it. Agent and payload-type filters apply likewise.
 */
export function matches(f: WsFilter, m: FrameMeta): boolean {
  if (f.events.length > 0 && !f.events.includes(m.event)) return false;
  if (f.threads.length > 0 && m.threadId !== null && !f.threads.includes(m.threadId)) return false;
  if (f.threads.length > 0 && m.threadId === null && m.agents.length > 0) return false;
  if (f.agents.length > 0 && m.agents.length > 0 && !m.agents.some((a) => f.agents.includes(a))) return false;
  if (f.payloadTypes.length > 0 && m.payloadType !== null && !f.payloadTypes.includes(m.payloadType)) return false;
  if (f.payloadTypes.length > 0 && m.payloadType === null && m.isMessage) return false;
  return true;
}
