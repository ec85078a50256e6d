import type { ProviderConfig } from '../../config/types.js';
import type { CompletionRequest, LlmProvider, ProviderResponse } from '../types.js';
import { servesModel } from './http.js';

/** What every provider takes from its organism.yaml entry: name, priority, served models. */
export abstract class ConfiguredProvider implements LlmProvider {
  abstract readonly type: LlmProvider['type'];

  constructor(protected readonly config: ProviderConfig) {}

  get name(): string {
    return this.config.name;
  }

  get priority(): number {
    return this.config.priority;
  }

  get maxRetries(): number {
    return this.config.maxRetries;
  }

  serves(model: string): boolean {
    return servesModel(this.config, model);
  }

  abstract complete(request: CompletionRequest, signal: AbortSignal): Promise<ProviderResponse>;
}
