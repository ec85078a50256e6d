import { providerServes } from '../config/document.js';
import type { ListenerConfig, OrganismConfig, ReplyFormat } from '../config/types.js';

/** The reply format of an agent: its own, else that of the provider serving its model (first by priority), else `tools`. */
export function replyFormatOf(listener: ListenerConfig, config: OrganismConfig): ReplyFormat {
  if (listener.replyFormat) return listener.replyFormat;
  const model = listener.model;
  const providers = [...config.llm.providers].sort((a, b) => a.priority - b.priority);
  const provider = model === null ? providers[0] : providers.find((p) => providerServes(p, model));
  return provider?.replyFormat ?? 'tools';
}
