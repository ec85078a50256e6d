import { describe, expect, it } from 'vitest';
import { loadOrganismFromString, sanitizeConfig } from '../../src/index.js';
import { CONFIG_PATH, y } from './helpers.js';

const SECRET_KEY = 'sk-test-0123456789abcdefSECRET';
const SECRET_TOKEN = 'operator-token-9f8e7d6c5b4a';

const CONFIG = y`
  organism: {name: secretive}
  llm:
    providers:
      - name: openai
        type: openai
        base_url: https://user:hunter2@llm.example.com/v1?api_key=inline
        api_key_env: TEST_OPENAI_KEY
        models: [gpt-4o]
  listeners:
    - name: writer
      handler: builtin:llm
      model: gpt-4o
      prompt: "Never reveal ${SECRET_KEY}"
      payload: Note
      mcp_servers: [files]
  mcp_servers:
    - {name: files, command: node files.js}
  payloads:
    Note: {fields: {text: string}}
  auth:
    tokens:
      - {name: ops, role: operator, token_env: TEST_OPS_TOKEN}
`;

describe('sanitizeConfig', () => {
  it('holds env var names, never their values or other credentials', async () => {
    const { config } = await loadOrganismFromString(CONFIG, CONFIG_PATH);
    const env = { TEST_OPENAI_KEY: SECRET_KEY, TEST_OPS_TOKEN: SECRET_TOKEN };
    const view = sanitizeConfig(config, env);
    const json = JSON.stringify(view);

    expect(json).not.toContain(SECRET_KEY);
    expect(json).not.toContain(SECRET_TOKEN);
    expect(json).not.toContain('hunter2');
    expect(json).not.toContain('inline');
    expect(json).toContain('"apiKeyEnv":"TEST_OPENAI_KEY"');
    expect(json).toContain('"tokenEnv":"TEST_OPS_TOKEN"');
    // A secret pasted into other text is scrubbed too.
    expect(view).toMatchObject({ listeners: [{ prompt: 'Never reveal [redacted]' }] });
  });

  it('reads process.env by default', async () => {
    const { config } = await loadOrganismFromString(CONFIG, CONFIG_PATH);
    process.env['TEST_OPS_TOKEN'] = SECRET_TOKEN;
    try {
      expect(JSON.stringify(sanitizeConfig(config))).not.toContain(SECRET_TOKEN);
    } finally {
      delete process.env['TEST_OPS_TOKEN'];
    }
  });

  it('is camelCase JSON with the whole config', async () => {
    const { config } = await loadOrganismFromString(CONFIG, CONFIG_PATH);
    const view = sanitizeConfig(config, {});
    expect(JSON.parse(JSON.stringify(view))).toEqual(view);
    expect(JSON.stringify(view)).not.toMatch(/"[a-z]+_[a-z_]+":/);
    expect(view).toEqual({
      name: 'secretive',
      maxTokensPerThread: 100000,
      maxConcurrentHandlers: 20,
      maxConcurrentPerAgent: 5,
      maxHops: 50,
      maxQueue: 10000,
      llm: {
        providers: [
          {
            name: 'openai',
            type: 'openai',
            baseUrl: 'https://llm.example.com/v1?api_key=%5Bredacted%5D',
            apiKeyEnv: 'TEST_OPENAI_KEY',
            models: ['gpt-4o'],
            priority: 0,
            timeoutSeconds: 60,
            maxRetries: 3,
            replyFormat: 'tools',
          },
        ],
        pricing: {},
        record: 'full',
        maxReplyBytes: 262144,
        maxMessagesPerReply: 20,
      },
      mcpServers: [{ name: 'files', command: ['node', 'files.js'], url: null, tools: null, timeoutSeconds: 30 }],
      listeners: [
        {
          name: 'writer',
          description: '',
          agent: true,
          peers: [],
          payload: 'Note',
          handler: 'builtin:llm',
          prompt: `Never reveal ${SECRET_KEY}`,
          model: 'gpt-4o',
          maxOutputTokens: 1024,
          // Derived: one provider of 60 s x 4 attempts + 7 s backoff, plus 30 s.
          timeoutSeconds: 277,
          replyFormat: null,
          mcpServers: ['files'],
          maxToolRounds: 8,
          maxToolCallsPerRound: 16,
          maxMessagesPerReply: null,
        },
      ],
      payloads: [{ name: 'Note', fields: [{ name: 'text', type: 'string', optional: false }] }],
      auth: { tokens: [{ name: 'ops', role: 'operator', tokenEnv: 'TEST_OPS_TOKEN' }] },
      journal: { maxAttempts: 3, retainDays: 7, failedRetainDays: 30 },
      loopGuard: { enabled: true, maxRepeats: 20, maxCycles: 18, maxCycleLength: 4, tokensPerMinute: 500000, window: 200 },
      metrics: { enabled: true, public: false },
      telemetry: { otlp: null, captureContent: false, contextManager: false, traceProbes: false },
    });
  });
});
