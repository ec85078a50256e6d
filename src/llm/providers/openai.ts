import type { EventSourceMessage } from 'eventsource-parser/stream';
import { Errors } from '../../errors/catalogue.js';
import { ProviderHttpError } from '../http-error.js';
import type { CallObserver, ChatMessage, CompletionRequest, ProviderResponse, TokenUsage, ToolCall } from '../types.js';
import { tokenCount } from '../usage-check.js';
import { ConfiguredProvider } from './configured.js';
import { Defaults } from '../../config/schema.js';
import { apiKey, eventJson, joinUrl, postStreaming, preview, ReplyMeter } from './http.js';

const OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** OpenAI's reasoning and newest models refuse `max_tokens` wherever they are served (proxies too). */
const COMPLETION_TOKENS_MODELS = /^(o\d|gpt-5)/;

interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

interface WireToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/** The token limit's parameter: OpenAI's current models take only `max_completion_tokens`; many compatible servers only `max_tokens`. */
export type MaxTokensParam = 'max_completion_tokens' | 'max_tokens';

/**
 * Any OpenAI-compatible Chat Completions endpoint (OpenAI, xAI, Ollama, vLLM, LM Studio),
 * streamed (`stream: true` with `stream_options.include_usage`, so usage arrives in the final
 * chunk), with native tool calling (`tools` / `tool_calls`, arguments as a JSON string).
 */
export class OpenAiProvider extends ConfiguredProvider {
  readonly type = 'openai' as const;
  /** Models that answered 400 asking for `max_completion_tokens` (auto mode only): asked that way from then on. */
  private readonly wantsCompletionTokens = new Set<string>();

  /**
   * `max_tokens_param` when configured; otherwise `max_completion_tokens` for OpenAI's own API
   * and its reasoning models anywhere, `max_tokens` for other servers (switching once per model
   * when a server asks for the other).
   */
  private paramFor(model: string): { param: MaxTokensParam; learn: boolean } {
    if (this.config.maxTokensParam) return { param: this.config.maxTokensParam, learn: false };
    const official = this.config.baseUrl === null || /^https:\/\/api\.openai\.com(\/|$)/.test(this.config.baseUrl);
    if (official || COMPLETION_TOKENS_MODELS.test(model) || this.wantsCompletionTokens.has(model)) return { param: 'max_completion_tokens', learn: false };
    return { param: 'max_tokens', learn: true };
  }

  async complete(request: CompletionRequest, signal: AbortSignal, observer: CallObserver = {}): Promise<ProviderResponse> {
    const { param, learn } = this.paramFor(request.model);
    try {
      return await this.send(request, param, signal, observer);
    } catch (err) {
      if (!learn || !(err instanceof ProviderHttpError) || err.status !== 400 || !err.providerMessage.includes('max_completion_tokens')) throw err;
      this.wantsCompletionTokens.add(request.model);
      return this.send(request, 'max_completion_tokens', signal, observer);
    }
  }

  private async send(request: CompletionRequest, param: MaxTokensParam, signal: AbortSignal, observer: CallObserver): Promise<ProviderResponse> {
    const key = apiKey(this.config);
    const body = {
      model: request.model,
      messages: [...(request.system ? [{ role: 'system', content: request.system }] : []), ...request.messages.map(wireMessage)],
      [param]: request.maxOutputTokens,
      ...(request.tools && request.tools.length > 0
        ? { tools: request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
        : {}),
      stream: true,
      stream_options: { include_usage: true },
    };
    observer.onRequest?.(body);
    const url = joinUrl(this.config.baseUrl ?? OPENAI_BASE_URL, '/chat/completions');
    const replyLimit = request.maxReplyBytes ?? Defaults.maxReplyBytes;
    const stream = new ChunkAssembler(request.model, observer, new ReplyMeter(replyLimit));
    const outcome = await postStreaming(this.config, url, key ? { authorization: `Bearer ${key}` } : {}, body, signal, (e) => stream.push(e), replyLimit);
    return outcome.streamed ? stream.finish() : fromCompletion(outcome.body, request.model);
  }
}

function wireMessage(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: m.content };
    case 'assistant':
      if (!m.toolCalls || m.toolCalls.length === 0) return { role: 'assistant', content: m.content };
      return {
        role: 'assistant',
        content: m.content === '' ? null : m.content,
        tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

function usageOf(u: OpenAiUsage): TokenUsage {
  const promptTokens = tokenCount(u.prompt_tokens, 'prompt_tokens') ?? 0;
  const completionTokens = tokenCount(u.completion_tokens, 'completion_tokens') ?? 0;
  return {
    promptTokens,
    completionTokens,
    totalTokens: tokenCount(u.total_tokens, 'total_tokens') ?? promptTokens + completionTokens,
    cacheReadTokens: tokenCount(u.prompt_tokens_details?.cached_tokens, 'prompt_tokens_details.cached_tokens'),
    cacheWriteTokens: null,
    reasoningTokens: tokenCount(u.completion_tokens_details?.reasoning_tokens, 'completion_tokens_details.reasoning_tokens'),
  };
}

const NO_USAGE_YET: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null };

/** Builds the answer from `chat.completion.chunk` events: text deltas, tool-call fragments by index, the final usage chunk. */
class ChunkAssembler {
  private text = '';
  private model: string;
  private finishReason: string | null = null;
  private usage: TokenUsage | null = null;
  private readonly calls: Array<{ id: string; name: string; arguments: string }> = [];
  private done = false;
  private chunks = 0;

  constructor(
    askedModel: string,
    private readonly observer: CallObserver,
    private readonly meter: ReplyMeter,
  ) {
    this.model = askedModel;
  }

  push(event: EventSourceMessage): void {
    if (event.data.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    const chunk = eventJson(event);
    const error = chunk['error'] as { message?: unknown } | undefined;
    if (error) throw Errors.LLM_BAD_RESPONSE(`error in stream: ${typeof error.message === 'string' ? error.message : preview(error)}`);
    // The final usage chunk has `choices: []` (OpenAI) or none at all (some compatible servers).
    const hasUsage = typeof chunk['usage'] === 'object' && chunk['usage'] !== null;
    const choices = Array.isArray(chunk['choices']) ? chunk['choices'] : hasUsage && chunk['choices'] == null ? [] : null;
    if (choices === null) throw Errors.LLM_BAD_RESPONSE(`not a chat completion chunk (${preview(chunk)})`);
    this.chunks++;
    if (typeof chunk['model'] === 'string') this.model = chunk['model'];
    for (const choice of choices as Array<{ index?: number; delta?: { content?: unknown; tool_calls?: WireToolCall[] }; finish_reason?: unknown }>) {
      if ((choice.index ?? 0) !== 0) continue;
      const content = choice.delta?.content;
      if (typeof content === 'string' && content !== '') {
        this.meter.add(content);
        this.text += content;
        this.observer.onDelta?.(content);
      }
      for (const [i, part] of (choice.delta?.tool_calls ?? []).entries()) {
        this.meter.add((part.function?.name ?? '') + (part.function?.arguments ?? ''));
        const slot = (this.calls[part.index ?? i] ??= { id: '', name: '', arguments: '' });
        if (part.id) slot.id = part.id;
        if (part.function?.name) slot.name += part.function.name;
        if (part.function?.arguments) slot.arguments += part.function.arguments;
      }
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    }
    if (hasUsage) {
      this.usage = usageOf(chunk['usage'] as OpenAiUsage);
      this.observer.onUsage?.(this.usage);
    }
  }

  finish(): ProviderResponse {
    if (this.chunks === 0) throw Errors.LLM_BAD_RESPONSE('the stream held no chat completion chunk');
    if (this.finishReason === null && !this.done) throw Errors.LLM_BAD_RESPONSE('the stream ended before the completion finished');
    return {
      content: this.text,
      toolCalls: this.calls.filter(Boolean).map((c, i): ToolCall => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments })),
      finishReason: this.finishReason,
      model: this.model,
      usage: this.usage ?? NO_USAGE_YET,
    };
  }
}

/** A whole `chat.completion` object (servers that do not stream); anything else is a bad response. */
function fromCompletion(data: object, askedModel: string): ProviderResponse {
  const d = data as { model?: unknown; choices?: unknown; usage?: OpenAiUsage };
  const choice = Array.isArray(d.choices) ? (d.choices[0] as { message?: { content?: unknown; tool_calls?: WireToolCall[] }; finish_reason?: unknown } | undefined) : undefined;
  if (!choice || typeof choice.message !== 'object' || choice.message === null) {
    throw Errors.LLM_BAD_RESPONSE(`not a chat completion (${preview(data)})`);
  }
  const message = choice.message;
  return {
    content: typeof message.content === 'string' ? message.content : '',
    toolCalls: (message.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      name: c.function?.name ?? '',
      arguments: c.function?.arguments ?? '',
    })),
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    model: typeof d.model === 'string' ? d.model : askedModel,
    usage: usageOf(d.usage ?? {}),
  };
}
