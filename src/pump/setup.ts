import type { ListenerConfig } from '../config/types.js';
import type { Guard } from '../core/guard.js';
import type { Handler } from '../core/handler.js';
import type { Message } from '../core/message.js';
import type { LlmRouter } from '../llm/router.js';
import type { PayloadRegistry } from '../payload/index.js';

/** A listener as a delivery runs it: its configuration and its handler. */
export interface ListenerView {
  readonly config: ListenerConfig;
  readonly handler: Handler;
}

/**
 * What a delivery runs with when its thread runs under another organism.yaml than the running
 * one (a fork's `configPath`, issue 29): that file's listeners, payload types, LLM router and
 * guardrails. Queues, limits, pauses and counters stay the running organism's (listeners are
 * the same names).
 */
export interface ListenerSetup {
  readonly listeners: ReadonlyMap<string, ListenerView>;
  readonly registry: PayloadRegistry;
  readonly llm: LlmRouter;
  guards(listener: string): readonly Guard[];
}

/** Where a message's setup comes from: null for the running organism's (nearly every message). */
export interface ListenerSetups {
  of(message: Message): Promise<ListenerSetup> | null;
}
