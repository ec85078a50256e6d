import type { JournalEntry } from '../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import type { ThreadRecord, ThreadStatus } from '../core/thread.js';
import { canonicalJson } from '../llm/request-hash.js';
import { forkedFromOf } from './fork.js';

/** One difference between two payloads: a JSON path (`$.a.b[2]`) and the value on each side (undefined: absent). */
export interface PayloadDifference {
  readonly path: string;
  readonly a: unknown;
  readonly b: unknown;
}

export interface ComparedMessage {
  readonly id: string;
  readonly from: string;
  readonly to: string;
  readonly payloadType: string;
  readonly state: string;
}

/** The messages at one position of both threads (oldest first); a side is null past its end. */
export interface AlignedMessages {
  readonly index: number;
  readonly a: ComparedMessage | null;
  readonly b: ComparedMessage | null;
  /** Same sender, receiver, payload type and payload. */
  readonly same: boolean;
  readonly payloadDiff: PayloadDifference[];
}

/** The first LLM call (per position in each thread's calls, oldest first) whose agent or request hash differs. */
export interface CallDivergence {
  readonly index: number;
  readonly agent: string;
  readonly a: { readonly callId: string; readonly agent: string; readonly requestHash: string | null } | null;
  readonly b: { readonly callId: string; readonly agent: string; readonly requestHash: string | null } | null;
}

export interface SideTotals {
  readonly threadId: string;
  readonly status: ThreadStatus;
  readonly messages: number;
  readonly llmCalls: number;
  readonly replayedCalls: number;
  /** Tokens of every call, replayed ones as originally used. */
  readonly tokens: { readonly prompt: number; readonly completion: number; readonly total: number };
  /** Tokens of the calls a provider answered (charged to the thread's budget). */
  readonly chargedTokens: number;
  readonly cost: number;
  /** Time spent in LLM calls (ms). */
  readonly llmLatencyMs: number;
  /** From the thread's creation to its last activity (ms). */
  readonly durationMs: number;
}

export interface ThreadComparison {
  readonly a: SideTotals;
  readonly b: SideTotals;
  readonly messages: AlignedMessages[];
  /** The first position where the threads differ (null: the same messages). */
  readonly firstDivergence: number | null;
  readonly firstCallDivergence: CallDivergence | null;
  /** Tool executions (code and MCP) that only one side made (by agent, tool and arguments). */
  readonly toolCallsOnlyIn: { readonly a: ComparedTool[]; readonly b: ComparedTool[] };
}

export interface ComparedTool {
  readonly id: string;
  readonly agent: string;
  readonly kind: 'mcp' | 'code';
  readonly server: string;
  readonly tool: string;
  readonly arguments: unknown;
}

export interface CompareSide {
  readonly thread: ThreadRecord;
  readonly entries: readonly JournalEntry[];
  readonly calls: readonly LlmCallRecord[];
  readonly tools: readonly ToolCallRecord[];
}

/** Aligns two threads message by message (time travel: a fork beside its source, or any two threads). */
export function compareThreads(a: CompareSide, b: CompareSide): ThreadComparison {
  const messages: AlignedMessages[] = [];
  const n = Math.max(a.entries.length, b.entries.length);
  let firstDivergence: number | null = null;
  for (let i = 0; i < n; i++) {
    const x = a.entries[i]?.message;
    const y = b.entries[i]?.message;
    const payloadDiff = x && y ? diff(x.payload, y.payload, '$') : [];
    const same = x !== undefined && y !== undefined && x.from === y.from && x.to === y.to && x.payloadType === y.payloadType && payloadDiff.length === 0;
    if (!same && firstDivergence === null) firstDivergence = i;
    messages.push({ index: i, a: x ? compared(a.entries[i]!) : null, b: y ? compared(b.entries[i]!) : null, same, payloadDiff });
  }
  return {
    a: totals(a),
    b: totals(b),
    messages,
    firstDivergence,
    firstCallDivergence: callDivergence(answered(sinceFork(a, b)), answered(sinceFork(b, a))),
    toolCallsOnlyIn: onlyIn(a.tools, b.tools),
  };
}

/**
 * `side`'s calls, without those a fork of it (`other`) never made: the calls of the deliveries
 * of the messages before the fork point, which the fork has as history.
 */
function sinceFork(side: CompareSide, other: CompareSide): readonly LlmCallRecord[] {
  const from = forkedFromOf(other.thread.metadata);
  if (!from || from.threadId !== side.thread.id) return side.calls;
  const at = side.entries.findIndex((e) => e.message.id === from.messageId);
  if (at <= 0) return side.calls;
  const history = new Set(side.entries.slice(0, at).map((e) => e.message.id));
  return side.calls.filter((c) => c.messageId === null || !history.has(c.messageId));
}

function compared(e: JournalEntry): ComparedMessage {
  const m = e.message;
  return { id: m.id, from: m.from, to: m.to, payloadType: m.payloadType, state: e.state };
}

/** The calls that answered (a failed attempt and its retry are one call of the agent). */
function answered(calls: readonly LlmCallRecord[]): LlmCallRecord[] {
  return calls.filter((c) => c.error === null);
}

function callDivergence(a: readonly LlmCallRecord[], b: readonly LlmCallRecord[]): CallDivergence | null {
  const side = (c: LlmCallRecord | undefined) => (c ? { callId: c.id, agent: c.agent, requestHash: c.requestHash ?? null } : null);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x && y && x.agent === y.agent && x.requestHash !== undefined && x.requestHash === y.requestHash) continue;
    return { index: i, agent: (y ?? x)!.agent, a: side(x), b: side(y) };
  }
  return null;
}

function toolKey(t: ToolCallRecord): string {
  return canonicalJson([t.agent, t.kind ?? 'mcp', t.server, t.tool, t.arguments ?? null]);
}

function onlyIn(a: readonly ToolCallRecord[], b: readonly ToolCallRecord[]): ThreadComparison['toolCallsOnlyIn'] {
  const view = (t: ToolCallRecord): ComparedTool => ({ id: t.id, agent: t.agent, kind: t.kind ?? 'mcp', server: t.server, tool: t.tool, arguments: t.arguments ?? null });
  const minus = (xs: readonly ToolCallRecord[], ys: readonly ToolCallRecord[]) => {
    const left = new Map<string, number>();
    for (const y of ys) left.set(toolKey(y), (left.get(toolKey(y)) ?? 0) + 1);
    return xs.filter((x) => {
      const k = toolKey(x);
      const count = left.get(k) ?? 0;
      if (count > 0) {
        left.set(k, count - 1);
        return false;
      }
      return true;
    });
  };
  return { a: minus(a, b).map(view), b: minus(b, a).map(view) };
}

function totals(side: CompareSide): SideTotals {
  let prompt = 0;
  let completion = 0;
  let charged = 0;
  let cost = 0;
  let latency = 0;
  let replayed = 0;
  for (const c of side.calls) {
    const u = c.usage;
    if (u) {
      prompt += u.promptTokens;
      completion += u.completionTokens;
      if (!c.replayed) charged += u.totalTokens;
    }
    if (c.replayed) replayed++;
    cost += c.cost ?? 0;
    latency += c.latencyMs;
  }
  const t = side.thread;
  return {
    threadId: t.id,
    status: t.status,
    messages: side.entries.length,
    llmCalls: side.calls.length,
    replayedCalls: replayed,
    tokens: { prompt, completion, total: prompt + completion },
    chargedTokens: charged,
    cost,
    llmLatencyMs: latency,
    durationMs: Math.max(0, t.lastActivity - t.createdAt),
  };
}

/** Where two JSON values differ, path by path (objects by key, arrays by position). */
export function diff(a: unknown, b: unknown, path: string, out: PayloadDifference[] = [], limit = 100): PayloadDifference[] {
  if (out.length >= limit) return out;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) diff(a[k], b[k], `${path}.${k}`, out, limit);
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) diff(a[i], b[i], `${path}[${i}]`, out, limit);
    return out;
  }
  if ((a === undefined) !== (b === undefined) || canonicalJson(a) !== canonicalJson(b)) out.push({ path, a, b });
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
