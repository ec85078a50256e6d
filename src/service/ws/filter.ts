import { ORGANISM_EVENT_TYPES } from '../../events/types.js';
import { Errors, type OrganismError } from '../../errors/catalogue.js';
import type { FrameMeta } from './frames.js';

/** A client's filter: each list narrows what it receives; absent or empty = everything. */
export interface WsFilter {
  readonly threads: readonly string[];
  readonly agents: readonly string[];
  readonly payloadTypes: readonly string[];
  readonly events: readonly string[];
}

export const NO_FILTER: WsFilter = { threads: [], agents: [], payloadTypes: [], events: [] };

/** Accepted spellings of each filter key (subscribe commands and query parameters). */
const KEYS: Record<keyof WsFilter, readonly string[]> = {
  threads: ['threads', 'thread', 'threadIds', 'thread_ids', 'threadId', 'thread_id'],
  agents: ['agents', 'agent'],
  payloadTypes: ['payloadTypes', 'payload_types', 'payloadType', 'payload_type'],
  events: ['events', 'event'],
};

function list(name: string, v: unknown): string[] | OrganismError {
  if (v === undefined || v === null) return [];
  const items = Array.isArray(v) ? v : [v];
  if (!items.every((x) => typeof x === 'string')) return Errors.WS_BAD_FILTER(`${name} must be a string or a list of strings`);
  return (items as string[]).filter((x) => x.length > 0);
}

/**
 * Reads a filter from a `subscribe` command or from query parameters (camelCase or snake_case,
 * singular or plural, one value or a list). Returns the error to answer when it is malformed.
 */
export function parseFilter(source: Record<string, unknown>): WsFilter | OrganismError {
  const out: Record<string, string[]> = {};
  for (const [key, names] of Object.entries(KEYS)) {
    const name = names.find((n) => source[n] !== undefined);
    const values = name === undefined ? [] : list(name, source[name]);
    if (!Array.isArray(values)) return values;
    out[key] = values;
  }
  const unknown = out['events']!.filter((e) => !(ORGANISM_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0) return Errors.WS_BAD_FILTER(`unknown event ${unknown.join(', ')}; known: ${ORGANISM_EVENT_TYPES.join(', ')}`);
  return out as unknown as WsFilter;
}

/**
 * Whether a frame passes a filter. The thread filter applies to every frame that concerns a
 * thread (messages, agent states while on a thread, thread records, usage, budget warnings,
 * peer denials, journal failures); frames about the whole organism (reload, organism status)
 * pass it, so a client watching one thread still learns that the organism stopped. Agent and
 * payload-type filters work the same way on frames that name listeners or carry a payload type.
 */
export function matches(f: WsFilter, m: FrameMeta): boolean {
  if (f.events.length > 0 && !f.events.includes(m.event)) return false;
  if (f.threads.length > 0) {
    if (m.threadId !== null ? !f.threads.includes(m.threadId) : m.agents.length > 0) return false;
  }
  if (f.agents.length > 0 && m.agents.length > 0 && !m.agents.some((a) => f.agents.includes(a))) return false;
  if (f.payloadTypes.length > 0) {
    if (m.payloadType !== null ? !f.payloadTypes.includes(m.payloadType) : m.isMessage) return false;
  }
  return true;
}
