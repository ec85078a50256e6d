import type { AgentInfo } from '../organism/views.js';

/**
 * GET /api/v1/agents' body, serialized once and answered again for as long as the figures it
 * was made from are the same. Never stale: every request still reads the agents afresh
 * (`organism.liveAgents()`), and the kept body is reused only when each of their fields equals,
 * by value, the field the body was made from (arrays element by element, against a copy kept
 * with the body); any other difference (a state, a queue depth, a counter, a listener added or
 * renamed by a reload) makes a new body. The body is a function of those figures alone (the
 * view and the route's serializer are pure), so what is answered is what a fresh
 * serialization would give. What it saves per request: the views, the serialization and the
 * copy of a string into the response (bench/tools/wrk-http.ts, issue 28).
 */
export class AgentListBody {
  private figures: readonly AgentInfo[] | null = null;
  private body: Buffer | null = null;

  /** The body for `agents`: the kept one when they are as it was made from, else `serialize(agents)` (then kept). */
  of(agents: readonly AgentInfo[], serialize: (agents: readonly AgentInfo[]) => string | Buffer): Buffer {
    if (this.body !== null && this.figures !== null && sameFigures(this.figures, agents)) return this.body;
    const serialized = serialize(agents);
    const body = typeof serialized === 'string' ? Buffer.from(serialized, 'utf8') : serialized;
    this.figures = agents.map(copyOf);
    this.body = body;
    return body;
  }
}

type Field = AgentInfo[keyof AgentInfo];

/** A copy the caller cannot change afterwards: arrays copied (their elements are strings). */
function copyOf(info: AgentInfo): AgentInfo {
  const copy: Record<string, Field> = {};
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

/** Field by field over both objects' keys: primitives by value, arrays of primitives element by element; anything else differs. */
function sameInfo(kept: AgentInfo, now: AgentInfo): boolean {
  let keys = 0;
  for (const key in now) {
    keys++;
    if (!Object.hasOwn(kept, key) || !sameField(kept[key as keyof AgentInfo], now[key as keyof AgentInfo])) return false;
  }
  for (const _ in kept) keys--;
  return keys === 0;
}

function sameField(kept: Field, now: Field): boolean {
  if (typeof now !== 'object' || now === null) return kept === now;
  if (!Array.isArray(now) || !Array.isArray(kept) || kept.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) {
    const v: unknown = now[i];
    if ((typeof v === 'object' && v !== null) || v !== kept[i]) return false;
  }
  return true;
}
