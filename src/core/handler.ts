import type { BoundLlmClient } from './llm.js';
import type { Message } from './message.js';

/** The logger a handler gets in `ctx.log` (lines carry the thread and message ids). */
export interface HandlerLogger {
  debug(msg: string, data?: Record<string, unknown>): void;
  info(msg: string, data?: Record<string, unknown>): void;
  warn(msg: string, data?: Record<string, unknown>): void;
  error(msg: string, data?: Record<string, unknown>): void;
}

/** What a handler knows about the delivery. It never learns the organism's topology. */
export interface HandlerContext {
  readonly threadId: string;
  readonly messageId: string;
  /** The sender, stamped by the pump. */
  readonly from: string;
  /** This listener's name. */
  readonly self: string;
  /** The type of the payload handed over: the listener's one type, or which of `payload: [A, B]` this message is. */
  readonly payloadType: string;
  /** 1 on first delivery; higher after a crash recovery redelivered it. */
  readonly attempt: number;
  readonly metadata: Readonly<Record<string, string>>;
  /** Aborted when the thread is killed, the handler times out or the organism stops. */
  readonly signal: AbortSignal;
  /** LLM client bound to this agent and thread (usage and budget are accounted to them). */
  readonly llm: BoundLlmClient;
  readonly log: HandlerLogger;
  /** This listener's declared peers (the only listeners it may address). */
  readonly peers: readonly string[];
  /** Earlier messages of this thread that this listener sent or received, oldest first. */
  history(limit?: number): Promise<readonly Message[]>;
}

/** One message a handler wants sent. `to` omitted means: reply to the sender. */
export interface Outgoing {
  readonly to?: string;
  /** Defaults to the payload type the target accepts; required when it accepts several (`payload: [A, B]`). */
  readonly payloadType?: string;
  readonly payload: Record<string, unknown>;
}

/** What a handler returns: nothing (its branch ends), one outgoing message, or a list of them. */
export type HandlerResult = void | undefined | null | Outgoing | readonly Outgoing[];

/** A handler: called with a validated payload and its context; what it returns is sent on. */
export type Handler = (payload: Record<string, unknown>, ctx: HandlerContext) => HandlerResult | Promise<HandlerResult>;

/**
 * Helpers for handler authors: `reply` answers the sender with `payload`. Generic only so that
 * a typed handler (`defineHandler`) checks what it returns; the value is a plain `Outgoing`.
 */
export const reply = <P extends Record<string, unknown>, K extends string = never>(payload: P, payloadType?: K): { readonly payload: P; readonly payloadType?: NoInfer<K> } =>
  payloadType === undefined ? { payload } : { payload, payloadType };
/** Addresses `payload` to the declared peer `to` (generic like `reply`, for typed handlers). */
export const send = <T extends string, P extends Record<string, unknown>, K extends string = never>(
  to: T,
  payload: P,
  payloadType?: K,
): { readonly to: T; readonly payload: P; readonly payloadType?: NoInfer<K> } => (payloadType === undefined ? { to, payload } : { to, payload, payloadType });
