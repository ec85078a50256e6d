import type { LlmCallStore } from '../core/storage.js';
import type { Redactor } from '../util/pii.js';

/**
 * The call store as the organism records through it: with privacy.redact, every text of an LLM
 * call record (the request body, the answer, tool call arguments, the error) and of a tool run
 * (arguments, result, error) is redacted before the store sees it. Reads pass through.
 */
export function redactingCalls(store: LlmCallStore, redactor: () => Redactor): LlmCallStore {
  return {
    recordCall: (record) => {
      const r = redactor();
      // The request hash is a digest, never personal data: kept as computed, so that redaction of
      // what is recorded never breaks a fork's match (a hex digest could look like a key).
      store.recordCall(r.active ? { ...r.value(record), requestHash: record.requestHash } : record);
    },
    recordTool: (record) => {
      const r = redactor();
      store.recordTool(r.active ? r.value(record) : record);
    },
    forMessage: (messageId) => store.forMessage(messageId),
    forThread: (threadId, page) => store.forThread(threadId, page),
    forAgent: (agent, page) => store.forAgent(agent, page),
    hashed: (threadId, limit) => store.hashed(threadId, limit),
  };
}
