import type { ProviderConfig } from '../../config/types.js';
import type { LlmProvider } from '../types.js';
import { AnthropicProvider } from './anthropic.js';
import { MockProvider } from './mock.js';
import { OpenAiProvider } from './openai.js';

/** The provider a `llm.providers[]` entry describes (mock, OpenAI-compatible or Anthropic). */
export function createProvider(config: ProviderConfig): LlmProvider {
  switch (config.type) {
    case 'mock':
      return new MockProvider(config);
    case 'openai':
      return new OpenAiProvider(config);
    case 'anthropic':
      return new AnthropicProvider(config);
  }
}

export { AnthropicProvider, MockProvider, OpenAiProvider };
