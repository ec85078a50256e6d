import type { CompletionRequest, ProviderResponse } from '../types.js';
import { ConfiguredProvider } from './configured.js';
import { apiKey, joinUrl, num, postJson } from './http.js';

interface MessagesResponse {
  model?: string;
  content?: Array<{ type?: string; text?: string }>;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_read_input_tokens?: number;
    cache_creation_input_tokens?: number;
  };
}

/** Anthropic's Messages API. */
export class AnthropicProvider extends ConfiguredProvider {
  readonly type = 'anthropic' as const;

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse> {
    const key = apiKey(this.config);
    const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
    if (key) headers['x-api-key'] = key;
    const body = {
      model: request.model,
      max_tokens: request.maxOutputTokens,
      ...(request.system ? { system: request.system } : {}),
      messages: request.messages,
    };
    const url = joinUrl(this.config.baseUrl ?? 'https://api.anthropic.com', '/v1/messages');
    const data = (await postJson(this.config, url, headers, body, signal)) as MessagesResponse;
    const u = data.usage ?? {};
    const cacheRead = num(u.cache_read_input_tokens);
    const cacheWrite = num(u.cache_creation_input_tokens);
    // Anthropic reports cache tokens beside input_tokens; our promptTokens counts them all.
    const promptTokens = (num(u.input_tokens) ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
    const completionTokens = num(u.output_tokens) ?? 0;
    return {
      content: (data.content ?? []).filter((b) => b.type === 'text').map((b) => b.text ?? '').join(''),
      model: data.model ?? request.model,
      usage: {
        promptTokens,
        completionTokens,
        totalTokens: promptTokens + completionTokens,
        cacheReadTokens: cacheRead,
        cacheWriteTokens: cacheWrite,
        reasoningTokens: null,
      },
    };
  }
}
