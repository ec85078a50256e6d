import type { Guard, GuardInput, GuardOutput } from '../core/guard.js';
import type { ChatMessage, ToolCall } from '../core/llm.js';
import { Errors, type OrganismError } from '../errors/catalogue.js';
import { builtinDetector, type DetectorName, Redactor } from '../util/pii.js';

/** The built-in guards of `guards:` (see docs/safety.md). */

/** `max_input_bytes: N`: blocks a call whose system prompt and turns pass N UTF-8 bytes. */
export function maxInputBytesGuard(limit: number): Guard {
  return {
    name: 'max_input_bytes',
    input: (call) => {
      const bytes = Buffer.byteLength(call.text, 'utf8');
      return bytes > limit ? { action: 'block', reason: `the input is ${bytes} bytes, more than max_input_bytes (${limit})` } : undefined;
    },
  };
}

/** `forbidden: [patterns]`: blocks an input or an answer matching one of the patterns (JavaScript regular expressions). */
export function forbiddenGuard(sources: readonly string[]): Guard {
  const patterns = sources.map((s) => ({ source: s, re: new RegExp(s, 'u') }));
  const check = (text: string) => {
    const hit = patterns.find((p) => p.re.test(text));
    return hit ? ({ action: 'block', reason: `matches the forbidden pattern ${JSON.stringify(hit.source)}` } as const) : undefined;
  };
  return { name: 'forbidden', input: (call) => check(call.text), output: (answer) => check(answerText(answer)) };
}

/** `pii: {detect: [...], action: block | redact}`: blocks (or masks, before the provider sees it) the detectors' finds in the input and the answer. */
export function piiGuard(detectors: readonly DetectorName[], action: 'block' | 'redact'): Guard {
  const redactor = new Redactor(detectors.map(builtinDetector));
  const found = (text: string) => [...new Set(redactor.find(text))];
  if (action === 'block') {
    const check = (text: string) => {
      const names = found(text);
      return names.length > 0 ? ({ action: 'block', reason: `contains personal data (${names.join(', ')})` } as const) : undefined;
    };
    return { name: 'pii', input: (call) => check(call.text), output: (answer) => check(answerText(answer)) };
  }
  return {
    name: 'pii',
    input: (call) => {
      if (found(call.text).length === 0) return undefined;
      return { action: 'rewrite', system: redactor.text(call.system), messages: call.messages.map((m) => redactMessage(m, redactor)) };
    },
    output: (answer) => {
      if (found(answerText(answer)).length === 0) return undefined;
      return { action: 'rewrite', text: redactor.text(answer.text), toolCalls: answer.toolCalls.map((c) => ({ ...c, arguments: redactor.text(c.arguments) })) };
    },
  };
}

function redactMessage(m: ChatMessage, redactor: Redactor): ChatMessage {
  if (m.role === 'assistant') {
    return { ...m, content: redactor.text(m.content), ...(m.toolCalls ? { toolCalls: m.toolCalls.map((c) => ({ ...c, arguments: redactor.text(c.arguments) })) } : {}) };
  }
  return { ...m, content: redactor.text(m.content) };
}

function answerText(answer: GuardOutput): string {
  return [answer.text, ...answer.toolCalls.map((c) => `${c.name} ${c.arguments}`)].join('\n');
}

/** The text an input guard reads: the system prompt and each turn (tool calls' arguments included). */
export function inputText(system: string, messages: readonly ChatMessage[]): string {
  const parts = [system];
  for (const m of messages) {
    parts.push(m.content);
    if (m.role === 'assistant' && m.toolCalls) for (const c of m.toolCalls) parts.push(`${c.name} ${c.arguments}`);
  }
  return parts.join('\n');
}

/** Which guard stopped a call, where, and why: on the call record and in the delivery's failure. */
export interface GuardTrip {
  readonly guard: string;
  readonly stage: 'input' | 'output';
  readonly reason: string;
}

export type InputGuarding =
  | { readonly ok: true; readonly system: string; readonly messages: readonly ChatMessage[]; readonly rewrittenBy: readonly string[] }
  | { readonly ok: false; readonly trip: GuardTrip };
export type OutputGuarding =
  | { readonly ok: true; readonly text: string; readonly toolCalls: readonly ToolCall[]; readonly rewrittenBy: readonly string[] }
  | { readonly ok: false; readonly trip: GuardTrip };

type Base = Omit<GuardInput, 'system' | 'messages' | 'text'>;

/** Runs the input guards in order, each seeing the previous one's rewrite; the first block stops. A guard that throws blocks. */
export async function guardInput(guards: readonly Guard[], base: Base, system: string, messages: readonly ChatMessage[]): Promise<InputGuarding> {
  let current = { system, messages };
  const rewrittenBy: string[] = [];
  for (const guard of guards) {
    if (!guard.input) continue;
    let verdict;
    try {
      verdict = await guard.input({ ...base, ...current, text: inputText(current.system, current.messages) });
    } catch (err) {
      return { ok: false, trip: { guard: guard.name, stage: 'input', reason: `the guard failed: ${err instanceof Error ? err.message : String(err)}` } };
    }
    if (!verdict || verdict.action === 'allow') continue;
    if (verdict.action === 'block') return { ok: false, trip: { guard: guard.name, stage: 'input', reason: String(verdict.reason ?? 'blocked') } };
    if (verdict.action === 'rewrite') {
      current = { system: verdict.system ?? current.system, messages: verdict.messages ?? current.messages };
      rewrittenBy.push(guard.name);
    }
  }
  return { ok: true, ...current, rewrittenBy };
}

/** Runs the output guards in order, as guardInput. */
export async function guardOutput(guards: readonly Guard[], base: Base, text: string, toolCalls: readonly ToolCall[]): Promise<OutputGuarding> {
  let current = { text, toolCalls };
  const rewrittenBy: string[] = [];
  for (const guard of guards) {
    if (!guard.output) continue;
    let verdict;
    try {
      verdict = await guard.output({ ...base, ...current });
    } catch (err) {
      return { ok: false, trip: { guard: guard.name, stage: 'output', reason: `the guard failed: ${err instanceof Error ? err.message : String(err)}` } };
    }
    if (!verdict || verdict.action === 'allow') continue;
    if (verdict.action === 'block') return { ok: false, trip: { guard: guard.name, stage: 'output', reason: String(verdict.reason ?? 'blocked') } };
    if (verdict.action === 'rewrite') {
      current = { text: verdict.text ?? current.text, toolCalls: verdict.toolCalls ?? current.toolCalls };
      rewrittenBy.push(guard.name);
    }
  }
  return { ok: true, ...current, rewrittenBy };
}

export function guardError(agent: string, trip: GuardTrip): OrganismError {
  return Errors.GUARDRAIL_BLOCKED.withData(trip, trip.guard, trip.stage, agent, trip.reason);
}
