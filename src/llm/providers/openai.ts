import type { CompletionRequest, ProviderResponse } from '../types.js';
import { ProviderHttpError } from '../http-error.js';
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

/** OpenAI's reasoning models refuse `max_tokens` and want `max_completion_tokens`. */
const COMPLETION_TOKENS_MODELS = /^(o\d|gpt-5)/;

/** Any OpenAI-compatible chat completions endpoint (OpenAI, xAI, Ollama, vLLM, LM Studio). */
export class OpenAiProvider extends ConfiguredProvider {
  readonly type = 'openai' as const;
  /** Models that answered 400 asking for `max_completion_tokens`: asked that way from then on. */
  private readonly wantsCompletionTokens = new Set<string>();

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse> {
    const modern = COMPLETION_TOKENS_MODELS.test(request.model) || this.wantsCompletionTokens.has(request.model);
    try {
      return await this.send(request, modern, signal);
    } catch (err) {
      // Older servers only know max_tokens, newer OpenAI models only the other: learn once.
      if (modern || !(err instanceof ProviderHttpError) || err.status !== 400 || !err.providerMessage.includes('max_completion_tokens')) throw err;
      this.wantsCompletionTokens.add(request.model);
      return this.send(request, true, signal);
    }
  }

  private async send(request: CompletionRequest, completionTokensParam: boolean, signal: AbortSignal): Promise<ProviderResponse> {
    const key = apiKey(this.config);
    const body = {
      model: request.model,
      messages: [...(request.system ? [{ role: 'system', content: request.system }] : []), ...request.messages],
      [completionTokensParam ? 'max_completion_tokens' : 'max_tokens']: request.maxOutputTokens,
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
