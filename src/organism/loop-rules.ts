import { createHash } from 'node:crypto';

/**
 * The loop breaker's rules (issue 30), as pure functions over a thread's traffic, oldest first:
 * the same state (the thread's journal since its last resume) gives the same finding in any
 * process, so a thread whose deliveries run on different workers is judged the same.
 */

/** One message as the rules see it. */
export interface Hop {
  readonly from: string;
  readonly to: string;
  /** Hash of the payload's canonical JSON (see payloadHash). */
  readonly hash: string;
}

export interface Finding {
  readonly rule: 'repeat' | 'cycle' | 'velocity';
  readonly edges: ReadonlyArray<{ readonly from: string; readonly to: string }>;
  readonly evidence: Readonly<Record<string, unknown>>;
  /** In words, for the hold's reason and the log line. */
  readonly reason: string;
}

/** JSON with object keys sorted and no whitespace; nothing else normalised (`{n: 1}` and `{n: 2}` differ). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

/** sha256 of the payload type and the payload's canonical JSON (hex, first 16 characters). */
export function payloadHash(payloadType: string, payload: unknown): string {
  return createHash('sha256').update(payloadType).update('\n').update(canonicalJson(payload)).digest('hex').slice(0, 16);
}

/**
 * Repeat: `hop` (one of the newest) crossed its edge with the same payload more than `limit`
 * times among `hops` (it included).
 */
export function repeatFinding(hops: readonly Hop[], hop: Hop, limit: number): Finding | null {
  let count = 0;
  for (const h of hops) if (h.from === hop.from && h.to === hop.to && h.hash === hop.hash) count++;
  if (count <= limit) return null;
  return {
    rule: 'repeat',
    edges: [{ from: hop.from, to: hop.to }],
    evidence: { payloadHash: hop.hash, count, limit },
    reason: `${hop.from} -> ${hop.to} carried the same payload ${count} times (limit ${limit})`,
  };
}

/**
 * Cycle: the newest hops repeat a cycle of edges (A->B->A, A->B->C->A; length 2..maxLength)
 * more than `limit(cycle)` times without a new payload: the run of hops periodic in their
 * edges ends with `repetitions` whole cycles in which no (edge, payload) appeared that the run
 * had not carried before.
 */
export function cycleFinding(hops: readonly Hop[], maxLength: number, limit: (cycle: readonly Hop[]) => number): Finding | null {
  const n = hops.length;
  for (let length = 2; length <= maxLength && length * 2 <= n; length++) {
    const cycle = hops.slice(n - length);
    if (!isCycle(cycle)) continue;
    // The run: back from the newest while each hop's edge is the edge `length` hops later.
    let start = n - length;
    while (start > 0 && sameEdge(hops[start - 1]!, hops[start - 1 + length]!)) start--;
    // The last hop of the run that carried something new (an edge and payload the run had not carried).
    const seen = new Set<string>();
    let lastNew = start - 1;
    for (let i = start; i < n; i++) {
      const key = `${hops[i]!.from}\u0000${hops[i]!.to}\u0000${hops[i]!.hash}`;
      if (!seen.has(key)) {
        seen.add(key);
        lastNew = i;
      }
    }
    const repetitions = Math.floor((n - 1 - lastNew) / length);
    const max = limit(cycle);
    if (repetitions > max) {
      const edges = cycle.map((h) => ({ from: h.from, to: h.to }));
      return {
        rule: 'cycle',
        edges,
        evidence: { cycleLength: length, repetitions, limit: max, hops: n - start },
        reason: `the cycle ${[...edges.map((e) => e.from), edges[0]!.from].join(' -> ')} repeated ${repetitions} times without a new payload (limit ${max})`,
      };
    }
  }
  return null;
}

/** Velocity: tokens spent in the last minute past the limit (0: not checked). */
export function velocityFinding(tokens: number, limit: number, edge: { from: string; to: string }): Finding | null {
  if (limit <= 0 || tokens <= limit) return null;
  return {
    rule: 'velocity',
    edges: [edge],
    evidence: { tokensLastMinute: tokens, limit },
    reason: `the thread spent ${tokens} tokens in the last minute (limit ${limit})`,
  };
}

const sameEdge = (a: Hop, b: Hop) => a.from === b.from && a.to === b.to;

/** Each hop's receiver sends the next, the last's receiver the first; not one edge over and over, and more than one party. */
function isCycle(cycle: readonly Hop[]): boolean {
  for (let i = 0; i < cycle.length; i++) {
    if (cycle[i]!.to !== cycle[(i + 1) % cycle.length]!.from) return false;
  }
  if (new Set(cycle.map((h) => h.from)).size < 2) return false;
  // The minimal period only (A->B->A->B is the cycle A->B->A, found at length 2).
  for (let p = 1; p < cycle.length; p++) {
    if (cycle.length % p === 0 && cycle.every((h, i) => sameEdge(h, cycle[i % p]!))) return false;
  }
  return true;
}
