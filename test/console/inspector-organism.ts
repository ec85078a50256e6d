// The organism the LLM call inspector is shown on (test/console/inspector.test.ts and the
// screenshots): an agent that calls a real MCP server (over Streamable HTTP), then sends an
// invalid message (refused: a repair round), then the right one to a code tool; and an agent
// whose provider is down (a closed port: every attempt fails).
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

/** A loopback port nothing listens on: bound, then closed. */
export function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export const INVESTIGATOR_PROMPT = 'You investigate questions with the facts tool, then tell the announcer what you found.';

export function inspectorYaml(mcpUrl: string, downPort: number, record: 'full' | 'metadata' = 'full'): string {
  return `organism:
  name: inspector-test

max_tokens_per_thread: 20000
journal:
  max_attempts: 1

auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}

llm:
  record: ${record}
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        investigator:
          - {calls: [{name: facts_lookup, arguments: {topic: '{{text}}'}}]}
          - {calls: [{name: send_to_announcer, arguments: {headline: 'Found {{text}}'}}]}
          - {calls: [{name: send_to_announcer, arguments: {text: 'Report on {{text}}: well documented'}}]}
    - name: down
      type: openai
      base_url: http://127.0.0.1:${downPort}/v1
      models: [down-]
      max_retries: 1
  pricing:
    mock-: {prompt: 0.5, completion: 1.5}

mcp_servers:
  - name: facts
    url: ${mcpUrl}

payloads:
  Question:
    description: A question to research
    fields:
      text: string
  Announcement:
    fields:
      text: string

listeners:
  - name: investigator
    description: Looks facts up and reports them
    handler: builtin:llm
    model: mock-1
    prompt: ${INVESTIGATOR_PROMPT}
    payload: Question
    peers: [announcer]
    mcp_servers: [facts]
  - name: announcer
    description: Announces a text
    handler: ./tools.ts#announce
    payload: Announcement
    peers: []
  - name: offline
    description: Asks a provider that is down
    handler: builtin:llm
    model: down-1
    prompt: You ask a provider that cannot be reached.
    payload: Question
    peers: []
  - name: guarded
    description: Refuses questions about secret plans (a guardrail)
    handler: builtin:llm
    model: mock-1
    prompt: You answer questions, but never about secret plans.
    payload: Question
    peers: []
    guards:
      - {forbidden: ['secret plans']}
`;
}

/** A `setup` for startServer: the inspector organism instead of the fixture's. */
export const writeInspectorOrganism = (yaml: string) => (dir: string) => writeFileSync(path.join(dir, 'organism.yaml'), yaml);
