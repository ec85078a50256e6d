import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigInvalidError, checkOrganism, isPayloadTypeDef, loadOrganism, loadOrganismFromString, type HandlerContext } from '../../src/index.js';
import { CONFIG_PATH, FIXTURES, y } from './helpers.js';

const MINIMAL = y`
  organism:
    name: minimal
  listeners:
    - name: shout
      handler: ./tools.ts#uppercase
      payload: Announcement
`;

const FULL = y`
  organism:
    name: full
  max_tokens_per_thread: 5000
  max_concurrent_handlers: 8
  max_concurrent_per_agent: 2
  max_hops: 12
  max_queue: 100
  llm:
    providers:
      - name: mock
        type: mock
        models: [mock-]
        priority: 5
        latency_ms: 25
        script:
          writer: ["<reply><Note><text>{{text}}</text></Note></reply>"]
          echo: only one
      - name: openai
        type: openai
        base_url: https://api.openai.com/v1
        api_key_env: OPENAI_API_KEY
        models: [gpt-4o, gpt-4.1]
        priority: 1
        timeout_seconds: 20
        max_retries: 0
    pricing:
      mock-: {prompt: 0, completion: 0}
      gpt-4o: {prompt: 2.5, completion: 10, cache_read: 1.25}
    max_reply_bytes: 65536
    max_messages_per_reply: 3
  payloads:
    Note:
      description: A short note
      fields:
        text: string
        tags: string[]?
        priority: {type: integer, optional: true, description: 1 is highest}
        attachments: list<Announcement>
  listeners:
    - name: writer
      description: Writes notes
      handler: builtin:llm
      prompt: You write notes.
      model: mock-1
      payload: Note
      peers: [shout, echo]
      max_output_tokens: 256
      timeout_seconds: 2.5
      max_messages_per_reply: 7
    - name: shout
      handler: ./tools.ts#uppercase
      payload: Announcement
    - name: echo
      agent: true
      handler: ./plain.js#echo
      payload: Note
  auth:
    tokens:
      - {name: ops, role: operator, token_env: OPS_TOKEN}
      - {name: dash, role: viewer, token_env: DASH_TOKEN}
  journal:
    max_attempts: 5
    retain_days: 2
    failed_retain_days: 9
`;

describe('loading a valid config', () => {
  it('applies every default', async () => {
    const loaded = await loadOrganismFromString(MINIMAL, CONFIG_PATH);
    expect(loaded.path).toBe(CONFIG_PATH);
    const c = loaded.config;
    expect(c).toMatchObject({
      name: 'minimal',
      maxTokensPerThread: 100000,
      maxConcurrentHandlers: 20,
      maxConcurrentPerAgent: 5,
      maxHops: 50,
      maxQueue: 10000,
      llm: { providers: [], pricing: {}, maxReplyBytes: 262144, maxMessagesPerReply: 20 },
      payloads: [],
      auth: { tokens: [] },
      journal: { maxAttempts: 3, retainDays: 7, failedRetainDays: 30 },
    });
    expect(c.listeners).toEqual([
      {
        name: 'shout',
        description: '',
        agent: false,
        peers: [],
        payload: 'Announcement',
        handlerRef: './tools.ts#uppercase',
        prompt: null,
        model: null,
        maxOutputTokens: 1024,
        timeoutSeconds: 30,
        replyFormat: null,
        mcpServers: [],
        maxToolRounds: 8,
        maxToolCallsPerRound: 16,
        maxMessagesPerReply: null,
      },
    ]);
  });

  it('applies provider defaults', async () => {
    const loaded = await loadOrganismFromString(
      y`
        organism: {name: p}
        llm:
          providers:
            - {name: mock, type: mock}
        listeners:
          - {name: shout, handler: ./tools.ts#uppercase, payload: Announcement}
      `,
      CONFIG_PATH,
    );
    expect(loaded.config.llm.providers).toEqual([
      {
        name: 'mock',
        type: 'mock',
        baseUrl: null,
        apiKeyEnv: null,
        models: [],
        priority: 0,
        timeoutSeconds: 60,
        maxRetries: 3,
        script: {},
        mockLatencyMs: 0,
        mockLatencyMaxMs: 0,
        replyFormat: 'tools',
        maxTokensParam: null,
      },
    ]);
  });

  it('reads a mock latency range {min, max, seed}; min above max is reported at latency_ms', async () => {
    const yaml = (latency: string) => `
        organism: {name: x}
        llm:
          providers:
            - {name: mock, type: mock, latency_ms: ${latency}}
        listeners:
          - {name: shout, handler: ./tools.ts#uppercase, payload: Announcement}
      `;
    const loaded = await loadOrganismFromString(yaml('{min: 200, max: 1500, seed: 7}'), CONFIG_PATH);
    expect(loaded.config.llm.providers[0]).toMatchObject({ mockLatencyMs: 200, mockLatencyMaxMs: 1500, mockLatencySeed: 7 });
    const err = await loadOrganismFromString(yaml('{min: 900, max: 100}'), CONFIG_PATH).catch((e: unknown) => e);
    expect(String((err as Error).message)).toContain('`latency_ms.min` (900) is greater than `latency_ms.max` (100)');
    const unknownKey = await loadOrganismFromString(yaml('{min: 1, most: 2}'), CONFIG_PATH).catch((e: unknown) => e);
    expect(String((unknownKey as Error).message)).toContain('most');
  });

  it('reads every key of a full organism', async () => {
    const { config, listeners, payloadTypes } = await loadOrganismFromString(FULL, CONFIG_PATH);
    expect(config).toMatchObject({
      name: 'full',
      maxTokensPerThread: 5000,
      maxConcurrentHandlers: 8,
      maxConcurrentPerAgent: 2,
      maxHops: 12,
      maxQueue: 100,
      journal: { maxAttempts: 5, retainDays: 2, failedRetainDays: 9 },
      auth: {
        tokens: [
          { name: 'ops', role: 'operator', tokenEnv: 'OPS_TOKEN' },
          { name: 'dash', role: 'viewer', tokenEnv: 'DASH_TOKEN' },
        ],
      },
    });
    expect(config.llm.providers[0]?.script).toEqual({
      writer: ['<reply><Note><text>{{text}}</text></Note></reply>'],
      echo: ['only one'],
    });
    expect(config.llm.providers[0]?.mockLatencyMs).toBe(25);
    expect(config.llm.providers[1]).toEqual({
      name: 'openai',
      type: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKeyEnv: 'OPENAI_API_KEY',
      models: ['gpt-4o', 'gpt-4.1'],
      priority: 1,
      timeoutSeconds: 20,
      maxRetries: 0,
      script: {},
      mockLatencyMs: undefined,
      replyFormat: 'tools',
      maxTokensParam: null,
    });
    expect(config.llm.pricing).toEqual({
      'mock-': { prompt: 0, completion: 0, cacheRead: null, cacheWrite: null },
      'gpt-4o': { prompt: 2.5, completion: 10, cacheRead: 1.25, cacheWrite: null },
    });
    expect(config.listeners[0]).toEqual({
      name: 'writer',
      description: 'Writes notes',
      agent: true,
      peers: ['shout', 'echo'],
      payload: 'Note',
      handlerRef: 'builtin:llm',
      prompt: 'You write notes.',
      model: 'mock-1',
      maxOutputTokens: 256,
      timeoutSeconds: 2.5,
      replyFormat: null,
      mcpServers: [],
      maxToolRounds: 8,
      maxToolCallsPerRound: 16,
      maxMessagesPerReply: 7,
    });
    expect(config.llm).toMatchObject({ maxReplyBytes: 65536, maxMessagesPerReply: 3 });
    expect(config.listeners[2]?.agent).toBe(true);

    // YAML types: branded like definePayload output, with the field grammar applied.
    expect(config.payloads).toHaveLength(1);
    const note = config.payloads[0];
    expect(isPayloadTypeDef(note)).toBe(true);
    expect(note).toEqual({
      name: 'Note',
      description: 'A short note',
      fields: [
        { name: 'text', type: { kind: 'string' }, optional: false },
        { name: 'tags', type: { kind: 'list', of: { kind: 'string' } }, optional: true },
        { name: 'priority', type: { kind: 'integer' }, optional: true, description: '1 is highest' },
        { name: 'attachments', type: { kind: 'list', of: { kind: 'ref', name: 'Announcement' } }, optional: false },
      ],
    });
    // All types: YAML ones, then those exported by handler modules.
    expect(payloadTypes.map((t) => t.name)).toEqual(['Note', 'Announcement']);

    expect(listeners.map((l) => l.config.name)).toEqual(['writer', 'shout', 'echo']);
    expect(listeners[0]?.handler).toBeNull();
    expect(listeners[0]?.handlerVersion).toBe('builtin:llm');
  });
});

describe('handler modules', () => {
  const ctx = {} as HandlerContext;

  it('loads a TypeScript module and finds its exported payload types', async () => {
    const { listeners, payloadTypes } = await loadOrganismFromString(MINIMAL, CONFIG_PATH);
    const shout = listeners[0];
    expect(shout?.handler).toBeTypeOf('function');
    expect(await shout?.handler?.({ text: 'hi' }, ctx)).toEqual({ payload: { text: 'HI' } });
    expect(shout?.handlerVersion).toMatch(new RegExp(`^${path.join(FIXTURES, 'tools.ts').replace(/[.\\/]/g, '\\$&')}#uppercase@[0-9a-f]{16}$`));
    expect(payloadTypes).toHaveLength(1);
    expect(payloadTypes[0]).toMatchObject({ name: 'Announcement', description: 'Something to announce' });
    expect(isPayloadTypeDef(payloadTypes[0])).toBe(true);
  });

  it('loads a plain JavaScript module', async () => {
    const { listeners } = await loadOrganismFromString(
      y`
        organism: {name: js}
        payloads:
          Ping: {fields: {n: integer}}
        listeners:
          - {name: echo, handler: ./plain.js#echo, payload: Ping}
      `,
      CONFIG_PATH,
    );
    expect(await listeners[0]?.handler?.({ n: 1 }, ctx)).toEqual({ payload: { n: 1 } });
    expect(listeners[0]?.handlerVersion).toContain(`${path.join(FIXTURES, 'plain.js')}#echo@`);
  });

  it('resolves module paths relative to the config file', async () => {
    const problems = await loadOrganismFromString(MINIMAL, path.join(FIXTURES, 'nested', 'organism.yaml')).then(
      () => [],
      (err: unknown) => (err instanceof ConfigInvalidError ? err.problems : []),
    );
    expect(problems[0]?.message).toBe(
      `handler module \`./tools.ts\` not found (looked for ${path.join(FIXTURES, 'nested', 'tools.ts')}); fix the path, which is relative to the config file`,
    );
  });
});

describe('reload', () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  /** A fresh directory with an organism.yaml whose one listener is `tool` of ./handlers.ts; its path. */
  function toolOrganism(): string {
    dir = mkdtempSync(path.join(tmpdir(), 'organism-config-'));
    const configPath = path.join(dir, 'organism.yaml');
    writeFileSync(
      configPath,
      y`
      organism: {name: reload}
      payloads:
        Ping: {fields: {n: integer}}
      listeners:
        - {name: tool, handler: ./handlers.ts#tool, payload: Ping}
    `,
    );
    return configPath;
  }

  /** Loads `configPath`, makes `change`, loads it again: the handler answers `before`, then `after`, under a new version. */
  async function expectReloaded(configPath: string, change: () => void, before: unknown, after: unknown): Promise<void> {
    const first = await loadOrganism(configPath);
    change();
    const second = await loadOrganism(configPath);

    const ctx = {} as HandlerContext;
    expect(await first.listeners[0]?.handler?.({ n: 1 }, ctx)).toEqual({ payload: before });
    expect(await second.listeners[0]?.handler?.({ n: 1 }, ctx)).toEqual({ payload: after });
    expect(second.listeners[0]?.handlerVersion).not.toBe(first.listeners[0]?.handlerVersion);
  }

  it('sees changed handler code, and a new handler version', async () => {
    const configPath = toolOrganism();
    const modulePath = path.join(dir!, 'handlers.ts');
    writeFileSync(modulePath, `export const tool = (): { payload: { version: number } } => ({ payload: { version: 1 } });\n`);
    await expectReloaded(
      configPath,
      () => writeFileSync(modulePath, `export const tool = (): { payload: { version: number } } => ({ payload: { version: 2 } });\n`),
      { version: 1 },
      { version: 2 },
    );
  });

  it.each([
    ['in an ES module package', true],
    ['in a directory without package.json', false],
  ])('sees a changed local import of the handler module, and a new handler version (%s)', async (_, esm) => {
    const configPath = toolOrganism();
    writeFileSync(path.join(dir!, 'handlers.ts'), `import { greeting } from './helper.js';\nexport const tool = (): { payload: { text: string } } => ({ payload: { text: greeting } });\n`);
    writeFileSync(path.join(dir!, 'helper.ts'), `export const greeting = 'hello';\n`);
    // ESM resolves imports through tsx's loader hooks, CommonJS through the require cache.
    if (esm) writeFileSync(path.join(dir!, 'package.json'), '{"type": "module"}\n');
    await expectReloaded(configPath, () => writeFileSync(path.join(dir!, 'helper.ts'), `export const greeting = 'bonjour';\n`), { text: 'hello' }, { text: 'bonjour' });
  });

  it('keeps the handler version when nothing changed', async () => {
    const a = await loadOrganismFromString(MINIMAL, CONFIG_PATH);
    const b = await loadOrganismFromString(MINIMAL, CONFIG_PATH);
    expect(b.listeners[0]?.handlerVersion).toBe(a.listeners[0]?.handlerVersion);
  });
});

describe('files and errors', () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  it('checkOrganism returns nothing for a valid file and every problem for a broken one', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'organism-config-'));
    writeFileSync(path.join(dir, 'tools.ts'), 'export const t = (): void => undefined;\n');
    const good = path.join(dir, 'good.yaml');
    writeFileSync(
      good,
      y`
      organism: {name: ok}
      payloads: {Ping: {fields: {n: integer}}}
      listeners: [{name: t, handler: ./tools.ts#t, payload: Ping}]
    `,
    );
    expect(await checkOrganism(good)).toEqual([]);

    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      y`
      organism: {name: ok}
      max_hops: 0
      listeners: [{name: t, handler: ./tools.ts#t, payload: Pong, peers: [x]}]
    `,
    );
    const problems = await checkOrganism(bad);
    expect(problems.map((p) => [p.file, p.line, p.keyPath])).toEqual([
      [bad, 2, 'max_hops'],
      // Sorted by place in the file: the payload comes before the peers on that line.
      [bad, 3, 'listeners[0].payload'],
      [bad, 3, 'listeners[0].peers[0]'],
    ]);
  });

  it('reports a file that cannot be read', async () => {
    const missing = path.join(FIXTURES, 'does-not-exist.yaml');
    const problems = await checkOrganism(missing);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: missing, line: null, column: null, keyPath: '' });
    expect(problems[0]?.message).toMatch(/^cannot read the config file: ENOENT/);
  });

  it('throws ConfigInvalidError whose message lists every problem', async () => {
    const err = await loadOrganismFromString(
      y`
        organism: {name: t}
        max_hops: -1
        max_queue: many
        listeners: []
      `,
      'organism.yaml',
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigInvalidError);
    const e = err as ConfigInvalidError;
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.problems).toHaveLength(2);
    expect(e.message).toBe(
      'Configuration is invalid: 2 problems\n' +
        '  organism.yaml:2:11: max_hops: expected a positive integer, got -1\n' +
        '  organism.yaml:3:12: max_queue: expected a positive integer, got "many"',
    );
  });
});
