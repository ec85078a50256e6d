import { agentReplyFormat } from '../config/document.js';
import type { ListenerConfig, OrganismConfig, ReplyFormat } from '../config/types.js';

/** The reply format of an agent: its own, else that of the provider serving its model (first by priority), else `tools`. */
export function replyFormatOf(listener: ListenerConfig, config: OrganismConfig): ReplyFormat {
  return agentReplyFormat(listener, config.llm.providers);
}
