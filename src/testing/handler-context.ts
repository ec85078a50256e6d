import type { Handler, HandlerContext, HandlerLogger, Outgoing } from '../core/handler.js';
import { Errors } from '../errors/catalogue.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';
import type { BoundLlmClient, CompletionResult, LlmProvider } from '../llm/types.js';
import { newId } from '../util/ids.js';
import type { LogLine } from './logs.js';

/** Options of `createHandlerContext` and `runHandler`: who the handler is and what it is handling. */
export interface HandlerContextOptions {
  /** The listener whose handler runs (default `handler`). */
  readonly self?: string;
  /** The sender (default `api`). */
  readonly from?: string;
  /** The payload type handed over (default `Payload`). */
  readonly payloadType?: string;
  /** Its declared peers (default none): `runHandler` reports messages to others as denied. */
  readonly peers?: readonly string[];
  readonly threadId?: string;
  readonly messageId?: string;
  readonly attempt?: number;
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * What `ctx.history()` returns: earlier messages of the thread (oldest first); a message may
   * leave out what does not matter to the handler (ids, time, hops are filled in).
   */
  readonly history?: ReadonlyArray<Partial<Message> & Pick<Message, 'from' | 'to' | 'payload'>>;
  /** Answers `ctx.llm` (e.g. `scripted({...})`); without it, a call of `ctx.llm` fails naming this option. */
  readonly llm?: LlmProvider;
  /** The model `ctx.llm` asks for when the handler names none (default `test-model`). */
  readonly model?: string;
}

/** A handler context for a unit test, recording what the handler did through it. */
export interface TestHandlerContext extends HandlerContext {
  /** What the handler logged with `ctx.log`, in order. */
  readonly logs: readonly LogLine[];
  /** The results of its `ctx.llm.complete` calls, in order. */
  readonly llmCalls: readonly CompletionResult[];
  /** Aborts `ctx.signal` (as a kill, a timeout or a stop of the organism would). */
  abort(reason?: string): void;
}

/** What `runHandler` found: the messages the handler returned, split by whether the pump would send them. */
export interface HandlerRun {
  /** Every message returned (a single one or none normalized to a list). */
  readonly outgoing: readonly Outgoing[];
  /** Those the pump would send: replies, and messages to declared peers. */
  readonly sent: readonly Outgoing[];
  /** Those addressed to a listener that is not a declared peer (the pump refuses them). */
  readonly denied: readonly Outgoing[];
  readonly ctx: TestHandlerContext;
}

/** A HandlerContext for calling one handler directly, with a controllable signal, recorded logs and a fake `ctx.llm`. */
export function createHandlerContext(options: HandlerContextOptions = {}): TestHandlerContext {
  const self = options.self ?? 'handler';
  const threadId = options.threadId ?? newId();
  const logs: LogLine[] = [];
  const llmCalls: CompletionResult[] = [];
  const controller = new AbortController();
  const messageId = options.messageId ?? newId();
  const history: Message[] = (options.history ?? []).map((m, i) => ({
    id: m.id ?? newId(),
    threadId,
    payloadType: m.payloadType ?? 'Payload',
    timestamp: m.timestamp ?? Date.now(),
    parentId: m.parentId ?? null,
    hops: m.hops ?? i,
    metadata: m.metadata ?? {},
    attempt: m.attempt ?? 1,
    ...m,
  }));
  const line =
    (level: LogLine['level']) =>
    (msg: string, data?: Record<string, unknown>): void => {
      logs.push({ ...(data ?? {}), level, msg, listener: self, threadId, messageId });
    };
  const log: HandlerLogger = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
  return {
    threadId,
    messageId,
    from: options.from ?? EXTERNAL_SENDER,
    self,
    payloadType: options.payloadType ?? 'Payload',
    attempt: options.attempt ?? 1,
    metadata: options.metadata ?? {},
    signal: controller.signal,
    llm: fakeLlm(options, self, threadId, controller.signal, llmCalls),
    log,
    peers: options.peers ?? [],
    history: async (limit = 50) => history.slice(-limit),
    logs,
    llmCalls,
    abort: (reason = 'aborted by the test') => controller.abort(reason),
  };
}

/**
 * Calls `handler` with `payload` and a test context (`createHandlerContext(options)`, or the
 * one given as `options.ctx`) and returns what it sent; what it throws is thrown.
 */
export async function runHandler(handler: Handler, payload: Record<string, unknown>, options: HandlerContextOptions & { readonly ctx?: TestHandlerContext } = {}): Promise<HandlerRun> {
  const ctx = options.ctx ?? createHandlerContext(options);
  const result = await handler(payload, ctx);
  const outgoing: readonly Outgoing[] = result === undefined || result === null ? [] : Array.isArray(result) ? result : [result as Outgoing];
  const allowed = (o: Outgoing) => o.to === undefined || ctx.peers.includes(o.to);
  return { outgoing, sent: outgoing.filter(allowed), denied: outgoing.filter((o) => !allowed(o)), ctx };
}

function fakeLlm(options: HandlerContextOptions, agent: string, threadId: string, signal: AbortSignal, calls: CompletionResult[]): BoundLlmClient {
  return {
    async complete(request) {
      const provider = options.llm;
      if (!provider) throw Errors.TEST_HANDLER_NO_LLM(agent);
      const model = request.model ?? options.model ?? 'test-model';
      const started = performance.now();
      const response = await provider.complete(
        {
          model,
          system: request.system ?? '',
          messages: request.messages,
          maxOutputTokens: request.maxOutputTokens ?? 1024,
          ...(request.tools ? { tools: request.tools } : {}),
          agent,
          threadId,
        },
        signal,
      );
      const latency = Math.round(performance.now() - started);
      const result: CompletionResult = {
        ...response,
        toolCalls: response.toolCalls ?? [],
        finishReason: response.finishReason ?? null,
        provider: provider.name,
        providerLatencyMs: latency,
        totalLatencyMs: latency,
        attempts: 1,
        cost: null,
        callId: newId(),
        overOutputCap: false,
      };
      calls.push(result);
      return result;
    },
  };
}
