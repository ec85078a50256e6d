import type { CompletionRequest, ProviderResponse } from '../types.js';
import { ConfiguredProvider } from './configured.js';
import { apiKey, joinUrl, num, postJson } from './http.js';

interface ChatCompletion {
  model?: string;
  choices?: Array<{ message?: { content?: string | null } }>;
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    total_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
    completion_tokens_details?: { reasoning_tokens?: number };
  };
}

/** Any OpenAI-compatible chat completions endpoint (OpenAI, xAI, Ollama, vLLM, LM Studio). */
export class OpenAiProvider extends ConfiguredProvider {
  readonly type = 'openai' as const;

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse> {
    const key = apiKey(this.config);
    const body = {
      model: request.model,
      messages: [...(request.system ? [{ role: 'system', content: request.system }] : []), ...request.messages],
      max_tokens: request.maxOutputTokens,
      stream: false,
    };
    const url = joinUrl(this.config.baseUrl ?? 'https://api.openai.com/v1', '/chat/completions');
    const data = (await postJson(this.config, url, key ? { authorization: `Bearer ${key}` } : {}, body, signal)) as ChatCompletion;
    const u = data.usage ?? {};
    const promptTokens = num(u.prompt_tokens) ?? 0;
    const completionTokens = num(u.completion_tokens) ?? 0;
    return {
      content: data.choices?.[0]?.message?.content ?? '',
      model: data.model ?? request.model,
      usage: {
        promptTokens,
        completionTokens,
        totalTokens: num(u.total_tokens) ?? promptTokens + completionTokens,
        cacheReadTokens: num(u.prompt_tokens_details?.cached_tokens),
        cacheWriteTokens: null,
        reasoningTokens: num(u.completion_tokens_details?.reasoning_tokens),
      },
    };
  }
}
