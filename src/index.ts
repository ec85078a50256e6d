/**
 * `organism`: what handler authors and embedders use, and nothing else. Each export is named
 * here (no `export *`), so adding one is a decision; etc/organism.api.md records the surface
 * and `npm run api:check` (part of `npm test`) fails when it changes unnoticed. Internals
 * (stores, the pump, the LLM router, the XML parser...) are imported by their paths inside
 * the package. The runtime knows nothing of HTTP; for the control service's API use
 * `organism/client`.
 *
 * @packageDocumentation
 */

// Writing handlers: the function, its context, what it returns, and the messages it sees.
export { reply, send, type Handler, type HandlerContext, type HandlerLogger, type HandlerResult, type Outgoing } from './core/handler.js';
// Typed handlers: types from organism.yaml (organism-env.d.ts, written by `organism types`).
export {
  defineHandler,
  handlerListener,
  type AcceptedType,
  type KnownListeners,
  type KnownPayloads,
  type ListenerName,
  type ListenerTypes,
  type OrganismTypes,
  type Payload,
  type PayloadTypeName,
  type PeerAcceptedType,
  type PeerMessage,
  type PeerName,
  type ReplyPayload,
  type TypedContext,
  type TypedHandler,
  type TypedHandlerMap,
  type TypedOutgoing,
  type TypedResult,
} from './core/typed-handler.js';
export { BUDGET_SENDER, BUDGET_WARNING_TYPE, EXTERNAL_SENDER, SYSTEM_ERROR_TYPE, SYSTEM_SENDER, type Message } from './core/message.js';

// Payload types: declared in code beside handlers, validated and rendered by the runtime.
export {
  definePayload,
  isPayloadTypeDef,
  type FieldExprType,
  type FieldSpec,
  type FieldSpecOptional,
  type FieldSpecType,
  type FieldsData,
  type PayloadDef,
  type StaticPayload,
} from './payload/define.js';
export { BUDGET_WARNING_DEF, SYSTEM_ERROR_DEF } from './payload/builtin.js';
export { PayloadType, type DefResolver } from './payload/payload-type.js';
export { PayloadRegistry, type PayloadProblem } from './payload/registry.js';
export type { FieldDef, FieldError, FieldType, PayloadTypeDef, ScalarKind, ValidationResult } from './payload/types.js';
export { escapeXml, unescapeXml } from './payload/xml-text.js';
export type { XmlElement, XmlNode, XmlText } from './payload/xml-tree.js';

// Code tools: functions an LLM agent calls inside its turn (`tools:` in organism.yaml).
export { defineTool, isToolDef, type CodeTool, type ToolContext, type ToolDef, type ToolFunction } from './agent/code-tool.js';

// Guardrails (`guards:` in organism.yaml): checks of an LLM call's input and answer.
export {
  defineGuard,
  isGuardDef,
  type GuardAllow,
  type GuardBlock,
  type Guard,
  type GuardDef,
  type GuardInput,
  type GuardInputRewrite,
  type GuardInputVerdict,
  type GuardOutput,
  type GuardOutputRewrite,
  type GuardOutputVerdict,
  type RedactFunction,
} from './core/guard.js';
export type { DetectorName } from './util/pii.js';

// organism.yaml: load, check and show a config.
export { checkOrganism, checkOrganismReport, loadOrganism, loadOrganismFromString, type LoadOptions } from './config/load.js';
export { ConfigInvalidError, formatConfigProblem } from './config/errors.js';
export { sanitizeConfig } from './config/sanitize.js';
export type * from './config/types.js';

// Errors: every error the product reports, with its stable code.
export { Errors, OrganismError, type ErrorCode, type ErrorFactory, type ErrorSpec } from './errors/catalogue.js';

// LLM: the client a handler gets in `ctx.llm`, and providers for embedders.
export { createProvider } from './llm/providers/index.js';
export { ProviderHttpError } from './llm/http-error.js';
export type { BoundLlmClient, CallObserver, ChatMessage, CompletionRequest, CompletionResult, LlmProvider, ProviderResponse, TokenUsage, ToolCall, ToolSpec } from './llm/types.js';

// Usage and budgets: pricing, live token accounting, per-thread budgets.
export { DEFAULT_PRICING, Pricing } from './usage/pricing.js';
export { UsageTracker, type AgentUsage, type ModelUsage, type UsageCounters, type UsageTotals } from './usage/tracker.js';
export {
  BudgetManager,
  type BudgetListQuery,
  type BudgetPage,
  type BudgetSeverity,
  type BudgetState,
  type BudgetThresholdEvent,
  type BudgetView,
  type Reservation,
  type ThreadBudgetInfo,
  type ThreadBudgetSnapshot,
} from './usage/budgets.js';
export type { BudgetArchive } from './usage/budget-archive.js';
export type { ScheduleSpec } from './core/schedule.js';
export { WEBHOOK_EVENTS, type WebhookConfig, type WebhookEvent } from './core/webhook.js';
export type { UsageEvent, UsageSubscriber } from './usage/types.js';
