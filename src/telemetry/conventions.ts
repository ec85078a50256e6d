/**
 * The OpenTelemetry GenAI semantic conventions this organism emits, pinned here in one place:
 * they are at Development status and still change (names as of semantic-conventions 1.37+,
 * where `gen_ai.system` became `gen_ai.provider.name`). Organism-specific names use the
 * `organism.` prefix.
 */
export const GenAiAttr = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  AGENT_NAME: 'gen_ai.agent.name',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  TOOL_NAME: 'gen_ai.tool.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  USAGE_CACHE_READ_INPUT_TOKENS: 'gen_ai.usage.cache_read.input_tokens',
  USAGE_CACHE_CREATION_INPUT_TOKENS: 'gen_ai.usage.cache_creation.input_tokens',
  USAGE_REASONING_OUTPUT_TOKENS: 'gen_ai.usage.reasoning.output_tokens',
  SYSTEM_INSTRUCTIONS: 'gen_ai.system_instructions',
  INPUT_MESSAGES: 'gen_ai.input.messages',
  OUTPUT_MESSAGES: 'gen_ai.output.messages',
  ERROR_TYPE: 'error.type',
} as const;

export const GenAiOperation = {
  CHAT: 'chat',
  INVOKE_AGENT: 'invoke_agent',
  EXECUTE_TOOL: 'execute_tool',
} as const;
export const GEN_AI_OPERATION_CHAT = GenAiOperation.CHAT;

/** Values of gen_ai.token.type (Prometheus label gen_ai_token_type). */
export const GenAiTokenType = {
  INPUT: 'input',
  OUTPUT: 'output',
  CACHE_READ: 'cache_read',
  CACHE_CREATION: 'cache_creation',
  REASONING: 'reasoning',
} as const;

export const OrganismAttr = {
  MESSAGE_ID: 'organism.message.id',
  ATTEMPT: 'organism.attempt',
  PAYLOAD_TYPE: 'organism.payload_type',
  COST_USD: 'organism.cost_usd',
  FAILURE_REASON: 'organism.failure.reason',
  OUTCOME: 'organism.outcome',
} as const;

/** Span events on a delivery span (and on a chat span: retries). */
export const OrganismEvent = {
  PEER_DENIED: 'organism.peer_denied',
  BUDGET_WARNING: 'organism.budget_warning',
  BUDGET_EXHAUSTED: 'organism.budget_exhausted',
  RETRY: 'organism.llm.retry',
} as const;
