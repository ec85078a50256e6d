/**
 * `organism/testing`: run an organism in a test (vitest, node:test) without a server, a
 * scripted LLM that answers by agent and request, and a context to call one handler directly.
 * docs/developing.md ("Testing") shows them at work.
 *
 * @packageDocumentation
 */

// A whole organism in the test's process, on a temporary store.
export {
  createTestOrganism,
  type SettledThread,
  type TestAnswer,
  type TestAnswerOptions,
  type TestApproveOptions,
  type TestConfig,
  type TestInboxQuery,
  type TestInjectOptions,
  type TestMessage,
  type TestOrganism,
  type TestOrganismOptions,
  type TestThread,
  type TestUsage,
} from './organism.js';
export type { LogLine } from './logs.js';
export { replayCassette, type CassetteReplay, type CassetteVerdict } from './cassette.js';

// The scripted model: replies as functions of the request, or lists, in both reply formats.
export { scripted, toolCall, type ScriptedAgent, type ScriptedCalls, type ScriptedLlm, type ScriptedReply, type ScriptedRequest } from './scripted.js';

// One handler, called directly.
export { createHandlerContext, runHandler, type HandlerContextOptions, type HandlerRun, type TestHandlerContext } from './handler-context.js';

// What the records hold (also `organism`'s types, here for the tests that read them).
export type { LlmCallRecord, ToolCallRecord } from '../core/llm.js';
export type { InboxClosed, InboxItem, InboxOutcome } from '../core/inbox.js';
export { reply, send } from '../core/handler.js';
