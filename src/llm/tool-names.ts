/**
 * The names the `builtin:llm` agent gives its tools, shared with the mock provider (which turns
 * scripted XML answers into the same calls). Providers accept `[A-Za-z0-9_-]{1,64}` only, so
 * other characters of a listener name (e.g. dots) become `_`.
 */
export const REPLY_TOOL = 'reply';
export const PEER_TOOL_PREFIX = 'send_to_';
export const TOOL_NAME_MAX = 64;

export function toolName(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, TOOL_NAME_MAX);
}

/** `send_to_<peer>`. */
export function peerToolName(peer: string): string {
  return toolName(`${PEER_TOOL_PREFIX}${peer}`);
}
