import type { ChatMessage, ToolCall } from './llm.js';

/**
 * Guardrails (`guards:` on a listener and organism-wide in organism.yaml): functions that see an
 * LLM call's input before the provider is asked (a block then costs no tokens at all) and its
 * answer before the agent uses it (before anything is sent), and allow it, block it (the
 * delivery fails with reason `guardrail`) or rewrite it.
 */

/** What an input guard sees: the call as it would go to the provider. */
export interface GuardInput {
  /** The agent (listener) making the call. */
  readonly agent: string;
  readonly threadId: string;
  readonly messageId: string | null;
  readonly model: string;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  /** The system prompt and every turn's text, joined by newlines (what size and pattern checks read). */
  readonly text: string;
}

/** What an output guard sees: the model's answer, before the agent uses it. */
export interface GuardOutput {
  readonly agent: string;
  readonly threadId: string;
  readonly messageId: string | null;
  readonly model: string;
  /** The answer's text. */
  readonly text: string;
  /** The answer's tool calls (each a message to send, or a tool to run). */
  readonly toolCalls: readonly ToolCall[];
}

/** Let it through. `undefined` (returning nothing) means the same. */
export interface GuardAllow {
  readonly action: 'allow';
}

/** Stop it: the delivery fails with reason `guardrail` and this reason. */
export interface GuardBlock {
  readonly action: 'block';
  readonly reason: string;
}

/** An input guard's rewrite: what goes to the provider instead (absent parts unchanged). */
export interface GuardInputRewrite {
  readonly action: 'rewrite';
  readonly system?: string;
  readonly messages?: readonly ChatMessage[];
}

/** An output guard's rewrite: what the agent uses instead (absent parts unchanged). */
export interface GuardOutputRewrite {
  readonly action: 'rewrite';
  readonly text?: string;
  readonly toolCalls?: readonly ToolCall[];
}

/** What an input guard returns: allow (or nothing), block with a reason, or a rewrite of the request. */
export type GuardInputVerdict = GuardAllow | GuardBlock | GuardInputRewrite | undefined | void;
/** What an output guard returns: allow (or nothing), block with a reason, or a rewrite of the answer. */
export type GuardOutputVerdict = GuardAllow | GuardBlock | GuardOutputRewrite | undefined | void;

/** A guardrail: its name (in failures and records) and what it checks. */
export interface GuardDef {
  /** Shown in the failure reason and on the call record; `guards:` entries default to their export name. */
  readonly name?: string;
  /** Runs before the provider call. */
  readonly input?: (call: GuardInput) => GuardInputVerdict | Promise<GuardInputVerdict>;
  /** Runs on the answer, before the agent uses it. */
  readonly output?: (answer: GuardOutput) => GuardOutputVerdict | Promise<GuardOutputVerdict>;
}

/** A guard ready to run (named). */
export interface Guard extends GuardDef {
  readonly name: string;
}

const GUARD_BRAND = Symbol.for('organism.guard');

/**
 * Declares a guardrail in TypeScript: export it and list it under `guards:` in organism.yaml
 * (on a listener, or at the top level for every LLM call).
 *
 *   export const noRefunds = defineGuard({
 *     input: (call) => (/refund/i.test(call.text) ? { action: 'block', reason: 'refunds go to a person' } : undefined),
 *   });
 */
export function defineGuard(def: GuardDef): GuardDef {
  if (typeof def !== 'object' || def === null) throw new TypeError('defineGuard: expected an object with `input` and/or `output` functions');
  if (def.input !== undefined && typeof def.input !== 'function') throw new TypeError('defineGuard: `input` must be a function');
  if (def.output !== undefined && typeof def.output !== 'function') throw new TypeError('defineGuard: `output` must be a function');
  if (def.input === undefined && def.output === undefined) throw new TypeError('defineGuard: give an `input` or an `output` function (or both)');
  if (def.name !== undefined && (typeof def.name !== 'string' || def.name === '')) throw new TypeError('defineGuard: `name` must be a non-empty string');
  const guard = { ...def };
  Object.defineProperty(guard, GUARD_BRAND, { value: true, enumerable: false });
  return Object.freeze(guard);
}

/** True for what `defineGuard` returns. */
export function isGuardDef(value: unknown): value is GuardDef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[GUARD_BRAND] === true;
}

/** A developer's redaction function for `privacy.redact` (`- ./privacy.ts#maskOrderIds`): the text with what it finds replaced. */
export type RedactFunction = (text: string) => string;
