import type { EventSourceMessage } from 'eventsource-parser/stream';
import { Errors } from '../../errors/catalogue.js';
import { ProviderHttpError } from '../http-error.js';
import type { CallObserver, ChatMessage, CompletionRequest, ProviderResponse, TokenUsage, ToolCall } from '../types.js';
import { tokenCount } from '../usage-check.js';
import { ConfiguredProvider } from './configured.js';
import { Defaults } from '../../config/schema.js';
import { apiKey, eventJson, joinUrl, num, postStreaming, preview, ReplyMeter } from './http.js';

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

type Block = { type?: string; text?: string; id?: string; name?: string; input?: unknown };

/** Statuses of the error types Anthropic may send inside a stream (so retries treat them as over HTTP). */
const STREAM_ERROR_STATUS: Record<string, number> = { overloaded_error: 529, api_error: 500, rate_limit_error: 429 };

/**
 * Anthropic's Messages API, streamed (message_start / content_block_* / message_delta /
 * message_stop events), with native tool calling: `tools` with `input_schema`, `tool_use`
 * blocks (stop_reason `tool_use`) and `tool_result` blocks in the next user turn.
 */
export class AnthropicProvider extends ConfiguredProvider {
  readonly type = 'anthropic' as const;

  async complete(request: CompletionRequest, signal: AbortSignal, observer: CallObserver = {}): Promise<ProviderResponse> {
    const key = apiKey(this.config);
    const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
    if (key) headers['x-api-key'] = key;
    const body = {
      model: request.model,
      max_tokens: request.maxOutputTokens,
      ...(request.system ? { system: request.system } : {}),
      messages: wireMessages(request.messages),
      ...(request.tools && request.tools.length > 0 ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) } : {}),
      stream: true,
    };
    observer.onRequest?.(body);
    const url = joinUrl(this.config.baseUrl ?? 'https://api.anthropic.com', '/v1/messages');
    const replyLimit = request.maxReplyBytes ?? Defaults.maxReplyBytes;
    const stream = new EventAssembler(request.model, observer, this.config.name, new ReplyMeter(replyLimit));
    const outcome = await postStreaming(this.config, url, headers, body, signal, (e) => stream.push(e), replyLimit);
    return outcome.streamed ? stream.finish() : fromMessage(outcome.body, request.model);
  }
}

/**
 * Our turns as Anthropic's: an assistant turn's tool calls become `tool_use` blocks; the tool
 * results after it become `tool_result` blocks of one user turn (with any user text that
 * follows), as the API requires them right after the `tool_use` turn.
 */
export function wireMessages(messages: readonly ChatMessage[]): Array<{ role: 'user' | 'assistant'; content: unknown }> {
  const out: Array<{ role: 'user' | 'assistant'; content: unknown }> = [];
  let results: Array<Record<string, unknown>> | null = null;
  const flushResults = (text: string | null) => {
    if (!results) return false;
    out.push({ role: 'user', content: text === null ? results : [...results, { type: 'text', text }] });
    results = null;
    return true;
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      (results ??= []).push({ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content, ...(m.isError ? { is_error: true } : {}) });
      continue;
    }
    if (m.role === 'user') {
      if (!flushResults(m.content)) out.push({ role: 'user', content: m.content });
      continue;
    }
    flushResults(null);
    if (!m.toolCalls || m.toolCalls.length === 0) {
      out.push({ role: 'assistant', content: m.content });
      continue;
    }
    out.push({
      role: 'assistant',
      content: [...(m.content !== '' ? [{ type: 'text', text: m.content }] : []), ...m.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: inputObject(c.arguments) }))],
    });
  }
  flushResults(null);
  return out;
}

/** `tool_use.input` must be an object: arguments the model broke are sent back as `{}`. */
function inputObject(args: string): unknown {
  try {
    const v = JSON.parse(args) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function usageOf(u: AnthropicUsage, outputTokens?: number): TokenUsage {
  const cacheRead = tokenCount(u.cache_read_input_tokens, 'cache_read_input_tokens');
  const cacheWrite = tokenCount(u.cache_creation_input_tokens, 'cache_creation_input_tokens');
  // Anthropic reports cache tokens beside input_tokens; our promptTokens counts them all.
  const promptTokens = (tokenCount(u.input_tokens, 'input_tokens') ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  const completionTokens = outputTokens ?? tokenCount(u.output_tokens, 'output_tokens') ?? 0;
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite, reasoningTokens: null };
}

/** Builds the answer from the event stream; usage from message_start, output tokens from message_delta. */
class EventAssembler {
  private model: string;
  private readonly blocks: Array<{ type: string; text: string; id: string; name: string; json: string; input: unknown }> = [];
  private stopReason: string | null = null;
  private usage: AnthropicUsage = {};
  private started = false;
  private stopped = false;

  constructor(
    askedModel: string,
    private readonly observer: CallObserver,
    private readonly provider: string,
    private readonly meter: ReplyMeter,
  ) {
    this.model = askedModel;
  }

  push(event: EventSourceMessage): void {
    const data = eventJson(event);
    const type = typeof data['type'] === 'string' ? data['type'] : event.event;
    switch (type) {
      case 'message_start': {
        const message = (data['message'] ?? {}) as { model?: unknown; usage?: AnthropicUsage };
        this.started = true;
        if (typeof message.model === 'string') this.model = message.model;
        this.usage = { ...(message.usage ?? {}) };
        this.observer.onUsage?.(usageOf(this.usage));
        return;
      }
      case 'content_block_start': {
        const block = (data['content_block'] ?? {}) as Block;
        this.meter.add((block.text ?? '') + (block.name ?? '') + (block.input === undefined ? '' : JSON.stringify(block.input)));
        this.blocks[num(data['index']) ?? this.blocks.length] = {
          type: block.type ?? 'text',
          text: block.text ?? '',
          id: block.id ?? '',
          name: block.name ?? '',
          json: '',
          input: block.input,
        };
        if (block.text) this.observer.onDelta?.(block.text);
        return;
      }
      case 'content_block_delta': {
        const block = this.blocks[num(data['index']) ?? -1];
        const delta = (data['delta'] ?? {}) as { type?: string; text?: string; partial_json?: string };
        if (!block) throw Errors.LLM_BAD_RESPONSE(`content_block_delta for a block that never started (${preview(data)})`);
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          this.meter.add(delta.text);
          block.text += delta.text;
          this.observer.onDelta?.(delta.text);
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          this.meter.add(delta.partial_json);
          block.json += delta.partial_json;
        }
        return;
      }
      case 'message_delta': {
        const delta = (data['delta'] ?? {}) as { stop_reason?: unknown };
        if (typeof delta.stop_reason === 'string') this.stopReason = delta.stop_reason;
        // message_delta's usage is cumulative; newer API versions repeat input and cache counts in it.
        this.usage = { ...this.usage, ...((data['usage'] ?? {}) as AnthropicUsage) };
        this.observer.onUsage?.(usageOf(this.usage));
        return;
      }
      case 'message_stop':
        this.stopped = true;
        return;
      case 'error': {
        const error = (data['error'] ?? {}) as { type?: string; message?: string };
        const status = STREAM_ERROR_STATUS[error.type ?? ''];
        const message = error.message ?? error.type ?? 'error event';
        if (status !== undefined) throw new ProviderHttpError(this.provider, status, message, null);
        throw Errors.LLM_BAD_RESPONSE(`error in stream: ${message}`);
      }
      default:
        return; // ping, content_block_stop and event types added later
    }
  }

  finish(): ProviderResponse {
    if (!this.started) throw Errors.LLM_BAD_RESPONSE('the stream held no message_start event');
    if (!this.stopped && this.stopReason === null) throw Errors.LLM_BAD_RESPONSE('the stream ended before the message finished');
    return assemble(
      this.blocks.filter(Boolean).map((b) => ({ type: b.type, text: b.text, id: b.id, name: b.name, input: b.json !== '' ? b.json : b.input })),
      this.stopReason,
      this.model,
      usageOf(this.usage),
    );
  }
}

function assemble(blocks: ReadonlyArray<Block & { input?: unknown }>, stopReason: string | null, model: string, usage: TokenUsage): ProviderResponse {
  const toolCalls: ToolCall[] = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b, i) => ({
      id: b.id || `toolu_${i}`,
      name: b.name ?? '',
      // Streamed input arrives as JSON text; a whole message carries the object.
      arguments: typeof b.input === 'string' ? b.input : JSON.stringify(b.input ?? {}),
    }));
  return {
    content: blocks
      .filter((b) => b.type === 'text')
      .map((b) => b.text ?? '')
      .join(''),
    toolCalls,
    finishReason: stopReason,
    model,
    usage,
  };
}

/** A whole Messages API `message` (servers that do not stream); anything else is a bad response. */
function fromMessage(data: object, askedModel: string): ProviderResponse {
  const d = data as { type?: unknown; model?: unknown; content?: unknown; stop_reason?: unknown; usage?: AnthropicUsage };
  if (!Array.isArray(d.content)) throw Errors.LLM_BAD_RESPONSE(`not a Messages API message (${preview(data)})`);
  return assemble(d.content as Block[], typeof d.stop_reason === 'string' ? d.stop_reason : null, typeof d.model === 'string' ? d.model : askedModel, usageOf(d.usage ?? {}));
}
