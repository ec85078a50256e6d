import type { EarlierAttempt } from '../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
import { ERASED } from '../core/thread.js';

/**
 * Tombstones (issue 30): what an erased thread's recorded text becomes on every store. The
 * shapes stay (a view, an export, a waterfall read them as before); the text is gone; numbers
 * (tokens, cost, latencies, attempts, times) stay exact.
 */

/** An erased message payload. */
export const ERASED_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({ erased: true });
export const ERASED_PAYLOAD_JSON = JSON.stringify(ERASED_PAYLOAD);

/** A text (an error, a note) erased, or null when there was none. */
export const erasedText = (text: string | null | undefined): string | null => (text === null || text === undefined ? null : ERASED);

export function erasedAttempts(attempts: readonly EarlierAttempt[]): EarlierAttempt[] {
  return attempts.map((a) => ({ ...a, error: erasedText(a.error) }));
}

export function erasedCall(c: LlmCallRecord): LlmCallRecord {
  return {
    ...c,
    request: ERASED,
    response: c.response && {
      ...c.response,
      text: erasedText(c.response.text),
      toolCalls: c.response.toolCalls.map((t) => ({ ...t, arguments: t.arguments === null ? null : ERASED })),
    },
    error: erasedText(c.error),
  };
}

export function erasedTool(t: ToolCallRecord): ToolCallRecord {
  return { ...t, arguments: ERASED, result: erasedText(t.result), error: erasedText(t.error) };
}
