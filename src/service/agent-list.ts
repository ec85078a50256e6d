import type { AgentInfo } from '../organism/views.js';

/**
 * GET /api/v1/agents' body, serialized once and answered again for as long as the figures it
 * was made from are the same. Never stale: every request still reads the agents afresh
 * (`organism.liveAgents()`), and the kept body is reused only when each of their fields equals,
 * by value, the field the body was made from (arrays element by element, against a copy kept
 * with the body; every field of AgentInfo: COMPARED_FIELDS); any other difference (a state, a queue depth, a counter, a listener added or
 * renamed by a reload) makes a new body. The body is a function of those figures alone (the
 * view and the route's serializer are pure), so what is answered is what a fresh
 * serialization would give. What it saves per request: the views and the serialization
 * (bench/tools/wrk-http.ts, issue 28). Kept as a string: Node writes a string body with the
 * response head in one chunk, a Buffer as a second one.
 */
export class AgentListBody {
  private figures: readonly AgentInfo[] | null = null;
  private body: string | null = null;

  /** The body for `agents`: the kept one when they are as it was made from, else `serialize(agents)` (then kept). */
  of(agents: readonly AgentInfo[], serialize: (agents: readonly AgentInfo[]) => string): string {
    if (this.body !== null && this.figures !== null && sameFigures(this.figures, agents)) return this.body;
    const body = serialize(agents);
    this.figures = agents.map(copyOf);
    this.body = body;
    return body;
  }
}

/** A copy the caller cannot change afterwards: arrays copied (their elements are strings). */
function copyOf(info: AgentInfo): AgentInfo {
  const copy: Record<string, AgentInfo[keyof AgentInfo]> = {};
  for (const key in info) {
    const value = info[key as keyof AgentInfo];
    copy[key] = Array.isArray(value) ? [...value] : value;
  }
  return copy as unknown as AgentInfo;
}

function sameFigures(kept: readonly AgentInfo[], now: readonly AgentInfo[]): boolean {
  if (kept.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) if (!sameInfo(kept[i]!, now[i]!)) return false;
  return true;
}

/**
 * Every field of AgentInfo, each compared by sameInfo (the type makes a new field a compile
 * error here until it is listed; the unit test changes each listed field and expects a new body).
 */
export const COMPARED_FIELDS: Readonly<Record<keyof AgentInfo, true>> = {
  name: true,
  description: true,
  isAgent: true,
  peers: true,
  payloadClass: true,
  payloadClasses: true,
  state: true,
  currentThread: true,
  queueDepth: true,
  lastActivity: true,
  messageCount: true,
  model: true,
  inFlight: true,
};

/** Field by field (written out: a generic walk over the keys cost more than reading the agents). */
function sameInfo(kept: AgentInfo, now: AgentInfo): boolean {
  return (
    kept.name === now.name &&
    kept.description === now.description &&
    kept.isAgent === now.isAgent &&
    sameList(kept.peers, now.peers) &&
    kept.payloadClass === now.payloadClass &&
    sameList(kept.payloadClasses, now.payloadClasses) &&
    kept.state === now.state &&
    kept.currentThread === now.currentThread &&
    kept.queueDepth === now.queueDepth &&
    kept.lastActivity === now.lastActivity &&
    kept.messageCount === now.messageCount &&
    kept.model === now.model &&
    kept.inFlight === now.inFlight
  );
}

/** Element by element (both absent: the same). */
function sameList(kept: readonly string[] | undefined, now: readonly string[] | undefined): boolean {
  if (kept === undefined || now === undefined) return kept === now;
  if (kept.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) if (kept[i] !== now[i]) return false;
  return true;
}
