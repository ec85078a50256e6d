import { BUDGET_WARNING_TYPE, SYSTEM_ERROR_TYPE } from '../core/message.js';
import { definePayload } from './define.js';
import type { PayloadTypeDef } from './types.js';

/** Sent by the pump to a listener to say why something it caused did not happen. */
export const SYSTEM_ERROR_DEF: PayloadTypeDef = definePayload(
  SYSTEM_ERROR_TYPE,
  {
    error: { type: 'string', description: 'What went wrong' },
    code: { type: 'string', description: 'Machine-readable reason (peer_denied, timeout, ...)' },
    reason: { type: 'string?', description: 'Failure reason' },
    messageId: { type: 'string?', description: 'The message the error is about' },
    to: { type: 'string?', description: 'The intended recipient of that message' },
    attempts: { type: 'integer?', description: 'A failure routed by `on_error`: the tries the failed delivery had' },
  },
  { description: 'An error reported by the organism' },
);

/** Sent to an agent when its thread crosses 75, 90 or 95 % of its token budget. */
export const BUDGET_WARNING_DEF: PayloadTypeDef = definePayload(
  BUDGET_WARNING_TYPE,
  {
    percentUsed: 'number',
    tokensUsed: 'integer',
    tokensRemaining: 'integer',
    maxTokens: 'integer',
    severity: { type: 'string', description: 'warning (75 %), critical (90 %) or final (95 %)' },
    message: 'string',
  },
  { description: "The thread's token budget is running low" },
);

export const BUILTIN_PAYLOADS: readonly PayloadTypeDef[] = [SYSTEM_ERROR_DEF, BUDGET_WARNING_DEF];
