/** approver: an approver or an operator (a viewer is refused). */
export type Access = 'public' | 'viewer' | 'operator' | 'approver';

export interface RouteCase {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** As documented in OpenAPI (`{param}`). */
  readonly template: string;
  readonly access: Access;
  /** A valid body, for routes that take one. */
  readonly body?: unknown;
  /** Not in the OpenAPI document: the interop protocols (A2A, MCP) have their own specs (issue 31). */
  readonly undocumented?: true;
}

/** Every route of the service with the role it needs. Tests fill `{param}` with real ids. */
export const ROUTES: readonly RouteCase[] = [
  { method: 'GET', template: '/health', access: 'public' },
  { method: 'GET', template: '/api/v1/openapi.json', access: 'viewer' },
  { method: 'GET', template: '/api/v1/organism', access: 'viewer' },
  { method: 'GET', template: '/api/v1/whoami', access: 'viewer' },
  { method: 'GET', template: '/api/v1/workers', access: 'viewer' },
  { method: 'GET', template: '/api/v1/organism/config', access: 'viewer' },
  { method: 'GET', template: '/api/v1/organism/edges', access: 'viewer' },
  { method: 'POST', template: '/api/v1/organism/reload', access: 'operator' },
  { method: 'POST', template: '/api/v1/organism/stop', access: 'operator' },
  { method: 'POST', template: '/api/v1/organism/restart', access: 'operator' },
  { method: 'GET', template: '/api/v1/capabilities', access: 'operator' },
  { method: 'GET', template: '/api/v1/capabilities/{name}', access: 'operator' },
  { method: 'GET', template: '/api/v1/agents', access: 'viewer' },
  { method: 'GET', template: '/api/v1/agents/{name}', access: 'viewer' },
  { method: 'GET', template: '/api/v1/agents/{name}/config', access: 'viewer' },
  { method: 'GET', template: '/api/v1/agents/{name}/schema', access: 'viewer' },
  { method: 'POST', template: '/api/v1/agents/{name}/pause', access: 'operator' },
  { method: 'POST', template: '/api/v1/agents/{name}/resume', access: 'operator' },
  { method: 'GET', template: '/api/v1/agents/{name}/llm-calls', access: 'operator' },
  { method: 'GET', template: '/api/v1/threads', access: 'viewer' },
  { method: 'GET', template: '/api/v1/threads/{threadId}', access: 'viewer' },
  { method: 'GET', template: '/api/v1/threads/{threadId}/messages', access: 'viewer' },
  { method: 'POST', template: '/api/v1/threads/kill', access: 'operator', body: { threadIds: ['no-such-thread'] } },
  { method: 'POST', template: '/api/v1/threads/{threadId}/kill', access: 'operator' },
  { method: 'POST', template: '/api/v1/threads/{threadId}/pause', access: 'operator' },
  { method: 'POST', template: '/api/v1/threads/{threadId}/resume', access: 'operator' },
  { method: 'DELETE', template: '/api/v1/threads/{threadId}', access: 'operator' },
  { method: 'POST', template: '/api/v1/threads/{threadId}/fork', access: 'operator', body: { dryRun: true } },
  { method: 'GET', template: '/api/v1/threads/{threadId}/compare/{otherId}', access: 'operator' },
  { method: 'GET', template: '/api/v1/threads/{threadId}/export', access: 'operator' },
  { method: 'GET', template: '/api/v1/threads/{threadId}/llm-calls', access: 'operator' },
  { method: 'GET', template: '/api/v1/threads/{threadId}/waterfall', access: 'viewer' },
  { method: 'GET', template: '/api/v1/messages', access: 'viewer' },
  { method: 'POST', template: '/api/v1/inject', access: 'operator', body: { to: 'echo', payload: { Text: { text: 'matrix' } } } },
  { method: 'GET', template: '/api/v1/usage', access: 'viewer' },
  { method: 'GET', template: '/api/v1/usage/threads', access: 'viewer' },
  { method: 'GET', template: '/api/v1/usage/threads/{threadId}', access: 'viewer' },
  { method: 'PUT', template: '/api/v1/usage/threads/{threadId}', access: 'operator', body: { maxTokens: 60000 } },
  { method: 'GET', template: '/api/v1/usage/agents/{agentId}', access: 'viewer' },
  { method: 'GET', template: '/api/v1/usage/models/{model}', access: 'viewer' },
  { method: 'POST', template: '/api/v1/usage/reset', access: 'operator' },
  { method: 'GET', template: '/api/v1/usage/history', access: 'viewer' },
  { method: 'GET', template: '/api/v1/usage/billing', access: 'viewer' },
  { method: 'GET', template: '/api/v1/usage/daily', access: 'viewer' },
  { method: 'GET', template: '/api/v1/journal', access: 'viewer' },
  { method: 'GET', template: '/api/v1/journal/stats', access: 'viewer' },
  { method: 'GET', template: '/api/v1/journal/{messageId}', access: 'viewer' },
  { method: 'POST', template: '/api/v1/journal/redeliver', access: 'operator', body: { messageIds: ['no-such-entry'] } },
  { method: 'POST', template: '/api/v1/journal/{messageId}/redeliver', access: 'operator' },
  { method: 'GET', template: '/api/v1/journal/{messageId}/llm-calls', access: 'operator' },
  { method: 'GET', template: '/api/v1/inbox', access: 'viewer' },
  { method: 'POST', template: '/api/v1/inbox/{id}/answer', access: 'approver', body: { payload: { Text: { text: 'x' } } } },
  { method: 'POST', template: '/api/v1/inbox/{id}/reject', access: 'approver', body: { note: 'no' } },
  { method: 'POST', template: '/api/v1/inbox/{id}/approve', access: 'approver', body: {} },
  // Interop (issue 31). The card's route is public, but the card needs a viewer token unless its listener says `a2a_public_card`.
  { method: 'GET', template: '/a2a/{name}/.well-known/agent-card.json', access: 'viewer', undocumented: true },
  { method: 'POST', template: '/a2a/{name}', access: 'operator', undocumented: true, body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'no-such-task' } } },
  // A viewer lists the tools; a `tools/call` needs an operator (the MCP test checks that).
  { method: 'POST', template: '/mcp', access: 'viewer', undocumented: true, body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } },
  { method: 'GET', template: '/mcp', access: 'viewer', undocumented: true },
  { method: 'DELETE', template: '/mcp', access: 'viewer', undocumented: true },
  { method: 'GET', template: '/api/v1/schedules', access: 'viewer' },
  { method: 'GET', template: '/api/v1/schedules/{name}', access: 'viewer' },
  { method: 'POST', template: '/api/v1/schedules', access: 'operator', body: { name: 'matrix', every: '1h', to: 'echo', payload: { Text: { text: 'tick' } } } },
  { method: 'DELETE', template: '/api/v1/schedules/{name}', access: 'operator' },
  { method: 'GET', template: '/api/v1/webhooks', access: 'viewer' },
];

export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => encodeURIComponent(values[key] ?? `unknown-${key}`));
}
