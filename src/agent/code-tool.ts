import type { HandlerLogger } from '../core/handler.js';
import type { PayloadDef } from '../payload/define.js';
import type { PayloadTypeDef } from '../payload/types.js';

const TOOL_BRAND = Symbol.for('organism.tool');

/** What a code tool is given beside its arguments: the delivery it runs in, and a signal to stop. */
export interface ToolContext {
  /**
   * Aborted when the tool's `timeout_seconds` pass, the thread is killed, the delivery times out
   * or the organism stops: pass it on (fetch, database drivers) and stop when it fires. The
   * agent does not wait for a tool past its abort.
   */
  readonly signal: AbortSignal;
  /** The thread the agent works in. */
  readonly threadId: string;
  /** The message the agent is handling. */
  readonly messageId: string;
  /** The agent (listener) whose model called the tool. */
  readonly agent: string;
  /** The agent's logger (lines carry the thread and message ids). */
  readonly log: HandlerLogger;
}

/**
 * A function an LLM agent may call inside its turn. It gets the arguments the model gave, already
 * validated against its input type; what it returns goes back to the model (strings as they are,
 * anything else as JSON); what it throws goes back as an error result.
 */
export type ToolFunction<I = Record<string, unknown>, R = unknown> = (input: I, ctx: ToolContext) => R | Promise<R>;

/** A code tool as `defineTool` makes it: the function with its input type, for `tools:` in organism.yaml. */
export interface ToolDef<I = Record<string, unknown>, R = unknown> {
  /** What the tool does, for the model (the tool's description). */
  readonly description: string;
  /** The type of its arguments: a `definePayload` type (whose data type `run` is given); its JSON Schema is the tool's parameters. */
  readonly input: PayloadDef<I>;
  /** The function: called with validated arguments; its result goes back to the model. */
  readonly run: ToolFunction<I, R>;
  /** Per call; absent: bounded by the agent's `timeout_seconds` (organism.yaml may set it per tool). */
  readonly timeoutSeconds?: number;
}

/**
 * Declares a code tool in TypeScript: export the result and list it under an LLM agent's
 * `tools` in organism.yaml (`- ./tools.ts#lookupOrder`).
 *
 *   export const lookupOrder = defineTool({
 *     description: 'Looks an order up by its id',
 *     input: definePayload('OrderQuery', { orderId: 'string' }),
 *     run: async ({ orderId }, { signal }) => orders.find(orderId, { signal }),
 *   });
 */
export function defineTool<I = Record<string, unknown>, R = unknown>(def: ToolDef<I, R>): ToolDef<I, R> {
  if (typeof def.run !== 'function') throw new TypeError('defineTool: `run` must be a function');
  if (typeof def.input !== 'object' || def.input === null || !Array.isArray(def.input.fields)) {
    throw new TypeError('defineTool: `input` must be a payload type (definePayload)');
  }
  if (def.timeoutSeconds !== undefined && !(Number.isFinite(def.timeoutSeconds) && def.timeoutSeconds > 0)) {
    throw new TypeError('defineTool: `timeoutSeconds` must be a positive number');
  }
  const tool = { ...def };
  Object.defineProperty(tool, TOOL_BRAND, { value: true, enumerable: false });
  return Object.freeze(tool);
}

/** True for values made by `defineTool` (how the loader tells them from plain functions). */
export function isToolDef(value: unknown): value is ToolDef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TOOL_BRAND] === true;
}

/** A code tool of one agent, resolved at load: what the model is offered and what runs. */
export interface CodeTool {
  /** The name the model calls it by. */
  readonly name: string;
  /** What it does, as the model is told. */
  readonly description: string;
  /** The type of its arguments (the tool's parameters are its JSON Schema). */
  readonly input: PayloadTypeDef;
  /** The function that runs. */
  readonly run: ToolFunction;
  /** null: bounded by the agent's timeout only. */
  readonly timeoutSeconds: number | null;
  /** Where it comes from, as organism.yaml names it: `./tools.ts#lookupOrder`. */
  readonly use: string;
  /** The module part of `use` (`./tools.ts`): recorded as the `server` of its executions. */
  readonly module: string;
}
