import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role } from '@a2a-js/sdk';
import { BASE_LISTENERS, OPERATOR, organismYaml, type Service } from '../service/fixture.js';

/** The service fixture's listeners, plus `helper` (an LLM agent exposed over A2A and MCP) and `slow` exposed with a public card. */
export const EXPOSED = [
  ...BASE_LISTENERS.filter((l) => l.name !== 'slow'),
  {
    name: 'helper',
    yaml: `  - name: helper
    description: Answers questions
    agent: true
    payload: Text
    handler: builtin:llm
    model: mock-small
    reply_format: xml
    prompt: You answer questions.
    expose: {a2a: true, mcp: true}`,
  },
  {
    name: 'slow',
    yaml: `  - name: slow
    description: Waits until released
    payload: Text
    handler: ./handlers.ts#slow
    timeout_seconds: 60
    expose: {a2a: true, a2a_public_card: true}`,
  },
];

export function exposedYaml(): string {
  return organismYaml(EXPOSED, 'a2a-test').replace(
    `        greeter:\n`,
    `        helper:\n          - '<reply><Text><text>The answer to {{text}} is 42</text></Text></reply>'\n        greeter:\n`,
  );
}

/** An SDK client authenticating with `token` (the peer is a real A2A client, not ours). */
export async function a2aClient(service: Service, listener: string, token = OPERATOR) {
  const authFetch: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }) });
  return factory.createFromUrl(`${service.url}/a2a/${listener}/`);
}

export function userText(text: string) {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
