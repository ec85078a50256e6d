import { OrganismError } from '../errors/catalogue.js';
import { ProviderHttpError } from './http-error.js';
import type { ChatMessage, CompletionResult } from './types.js';

/** One LLM call as the router starts it (after its budget reservation). */
export interface LlmCallInfo {
  readonly model: string;
  readonly agent: string;
  readonly threadId: string;
  readonly maxOutputTokens: number;
  readonly system: string;
  readonly messages: readonly ChatMessage[];
}

/** One LLM call as an observer follows it. */
export interface LlmCallWatch {
  /** A retryable failure: the router waits `delayMs`, then tries `provider` again. */
  retried(provider: string, reason: string, delayMs: number): void;
  succeeded(result: CompletionResult): void;
  failed(error: unknown): void;
}

/** Watches LLM calls for telemetry; synchronous and cheap, like DeliveryObserver. */
export interface LlmObserver {
  started(call: LlmCallInfo): LlmCallWatch;
}

const NONE: LlmCallWatch = { retried() {}, succeeded() {}, failed() {} };

/** The LLM observers of an organism; an observer that throws is reported and ignored. */
export class LlmObservers implements LlmObserver {
  private readonly list: LlmObserver[] = [];

  constructor(private readonly onError: (err: unknown) => void) {}

  add(observer: LlmObserver): () => void {
    this.list.push(observer);
    return () => {
      const i = this.list.indexOf(observer);
      if (i >= 0) this.list.splice(i, 1);
    };
  }

  started(call: LlmCallInfo): LlmCallWatch {
    if (this.list.length === 0) return NONE;
    const watches = this.list.map((o) => this.guard(() => o.started(call)) ?? NONE);
    return {
      retried: (provider, reason, delayMs) => watches.forEach((w) => void this.guard(() => w.retried(provider, reason, delayMs))),
      succeeded: (result) => watches.forEach((w) => void this.guard(() => w.succeeded(result))),
      failed: (error) => watches.forEach((w) => void this.guard(() => w.failed(error))),
    };
  }

  private guard<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      this.onError(err);
      return undefined;
    }
  }
}

/** A bounded label for why a call was retried: `http_<status>`, or the catalogue code. */
export function retryReasonOf(err: unknown): string {
  if (err instanceof ProviderHttpError) return `http_${err.status}`;
  if (err instanceof OrganismError) return err.code.toLowerCase();
  return 'other';
}

/** A bounded label for a failed call: the catalogue code, or the error's class name. */
export function errorTypeOf(err: unknown): string {
  if (err instanceof OrganismError) return err.code;
  if (err instanceof ProviderHttpError) return `http_${err.status}`;
  return err instanceof Error ? err.constructor.name : 'unknown';
}
