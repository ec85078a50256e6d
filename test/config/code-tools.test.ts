import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkOrganism, isPayloadTypeDef, isToolDef, loadOrganism, loadOrganismFromString, sanitizeConfig } from '../../src/index.js';
import { CONFIG_PATH, FIXTURES, problemsOf, y } from './helpers.js';

/** An organism whose LLM agent `desk` lists `tools` (one item a line; the first on line 17), `extra` lines before them. */
const desk = (tools: readonly string[], extra: readonly string[] = []) =>
  [
    'organism: {name: desk}',
    'llm:',
    '  providers:',
    '    - {name: mock, type: mock}',
    'mcp_servers:',
    '  - {name: files, command: [node, files.js], tools: [read_file, list]}',
    '  - {name: search, url: http://127.0.0.1:9/mcp}',
    'listeners:',
    '  - name: desk',
    '    handler: builtin:llm',
    '    prompt: You answer.',
    '    model: m',
    '    payload: Announcement',
    '    peers: [shout]',
    '    mcp_servers: [files, search]',
    ...extra.map((l) => `    ${l}`),
    ...(tools.length > 0 ? ['    tools:', ...tools.map((t) => `      ${t}`)] : []),
    '  - name: shout',
    '    handler: ./tools.ts#uppercase',
    '    payload: Announcement',
    '',
  ].join('\n');

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

describe('tools: of an LLM agent', () => {
  it('loads both forms: a defineTool export (schema in code) and a plain function with the payload type of its input', async () => {
    const loaded = await loadOrganismFromString(
      desk(['- ./code-tools.ts#lookupOrder', '- {use: ./code-tools.ts#refund, input: RefundRequest, name: make_refund, description: Refunds part of an order, timeout_seconds: 2.5}']),
      CONFIG_PATH,
    );
    const agent = loaded.listeners.find((l) => l.config.name === 'desk')!;
    expect(agent.config.tools).toEqual([
      { use: './code-tools.ts#lookupOrder', input: null, name: null, description: null, timeoutSeconds: null },
      { use: './code-tools.ts#refund', input: 'RefundRequest', name: 'make_refund', description: 'Refunds part of an order', timeoutSeconds: 2.5 },
    ]);
    const [lookup, refund] = agent.tools!;
    expect(lookup).toMatchObject({ name: 'lookupOrder', description: 'Looks an order up by its id', timeoutSeconds: 5, use: './code-tools.ts#lookupOrder', module: './code-tools.ts' });
    expect(lookup!.input).toMatchObject({ name: 'OrderQuery', fields: [{ name: 'orderId' }] });
    expect(await lookup!.run({ orderId: 'A-1' }, {} as never)).toEqual({ orderId: 'A-1', status: 'shipped' });
    expect(refund).toMatchObject({ name: 'make_refund', description: 'Refunds part of an order', timeoutSeconds: 2.5, module: './code-tools.ts' });
    expect(refund!.input.name).toBe('RefundRequest');
    expect(await refund!.run({ orderId: 'A-1', cents: 250 }, {} as never)).toBe('refunded 250 cents');
    // The types of the tools' module and the tool's own input type are payload types of the organism.
    expect(loaded.payloadTypes.map((t) => t.name).sort()).toEqual(['Announcement', 'OrderQuery', 'RefundRequest']);
    expect(loaded.payloadTypes.every(isPayloadTypeDef)).toBe(true);
    // A reload sees the tools' code: it is part of the agent's handler version.
    expect(agent.handlerVersion).toMatch(/^builtin:llm\+\.\/code-tools\.ts#lookupOrder@[0-9a-f]{16},\.\/code-tools\.ts#refund@[0-9a-f]{16}$/);
    expect(sanitizeConfig(loaded.config).listeners).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'desk', tools: agent.config.tools })]));
  });

  it('a listener without tools has no tools key (the config of existing organisms is unchanged)', async () => {
    const loaded = await loadOrganismFromString(desk([]), CONFIG_PATH);
    const agent = loaded.listeners.find((l) => l.config.name === 'desk')!;
    expect(agent.config).not.toHaveProperty('tools');
    expect(agent).not.toHaveProperty('tools');
    expect(agent.handlerVersion).toBe('builtin:llm');
  });

  it('defineTool marks its result; plain functions and payload types are not tools', async () => {
    const { lookupOrder, refund, RefundRequest } = await import('./fixtures/code-tools.js');
    expect(isToolDef(lookupOrder)).toBe(true);
    expect(isToolDef(refund)).toBe(false);
    expect(isToolDef(RefundRequest)).toBe(false);
  });

  describe('names: no collision with the agent’s other tools (reply, send_to_*, its MCP servers’ tools) or with each other', () => {
    const cases: Array<[string, string, string, string]> = [
      [
        'reply',
        '{use: ./code-tools.ts#refund, input: RefundRequest, name: reply}',
        'listeners[0].tools[0].name',
        "tool `reply` of agent `desk` collides with the agent's own tools (`reply` and `send_to_<peer>` send its messages); give it another `name`",
      ],
      [
        'send_to_*',
        '{use: ./code-tools.ts#refund, input: RefundRequest, name: send_to_billing}',
        'listeners[0].tools[0].name',
        "tool `send_to_billing` of agent `desk` collides with the agent's own tools (`reply` and `send_to_<peer>` send its messages); give it another `name`",
      ],
      [
        'a listed tool of an MCP server',
        '{use: ./code-tools.ts#refund, input: RefundRequest, name: files_read_file}',
        'listeners[0].tools[0].name',
        'tool `files_read_file` of agent `desk` collides with tool `read_file` of MCP server `files`, which the agent is offered as `files_read_file`; give it another `name`',
      ],
      [
        'the prefix of an MCP server that lists no tools',
        '{use: ./code-tools.ts#refund, input: RefundRequest, name: search_web}',
        'listeners[0].tools[0].name',
        "tool `search_web` of agent `desk` starts with `search_`, the prefix of the tools of MCP server `search` (which lists no `tools`, so any of its tools may take that name); give it another `name` or list the server's `tools`",
      ],
      [
        'a name providers refuse',
        '{use: ./code-tools.ts#refund, input: RefundRequest, name: make refund}',
        'listeners[0].tools[0].name',
        'tool name `make refund` of agent `desk` is not a valid tool name: use 1 to 64 letters, digits, `_` and `-` (set `name` to rename it)',
      ],
    ];
    it.each(cases)('%s', async (_what, entry, keyPath, message) => {
      const problems = await problemsOf(desk([`- ${entry}`]));
      expect(problems).toEqual([expect.objectContaining({ keyPath, line: 17, message })]);
    });

    it('two tools of one agent with one name', async () => {
      const problems = await problemsOf(desk(['- ./code-tools.ts#lookupOrder', '- {use: ./code-tools.ts#refund, input: RefundRequest, name: lookupOrder}']));
      expect(problems).toEqual([
        expect.objectContaining({ keyPath: 'listeners[0].tools[1].name', line: 18, message: 'agent `desk` has two tools named `lookupOrder`; give one of them another `name`' }),
      ]);
    });

    it('organism check refuses a collision the same way (a file on disk)', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'code-tools-'));
      dirs.push(dir);
      writeFileSync(
        path.join(dir, 'tools.ts'),
        "import { definePayload } from 'organism';\nexport const Announcement = definePayload('Announcement', { text: 'string' });\nexport const uppercase = () => undefined;\n",
      );
      writeFileSync(path.join(dir, 'code-tools.ts'), "export async function refund() { return 'refunded'; }\n");
      const file = path.join(dir, 'organism.yaml');
      writeFileSync(file, desk(['- {use: ./code-tools.ts#refund, input: Announcement, name: reply}']));
      const problems = await checkOrganism(file);
      expect(problems).toEqual([
        expect.objectContaining({ file, keyPath: 'listeners[0].tools[0].name', line: 17, message: expect.stringContaining('tool `reply` of agent `desk` collides') }),
      ]);
    });
  });

  describe('modules and exports: one clear problem each, at check and load time', () => {
    const problemOf = async (...tools: string[]) => {
      const problems = await problemsOf(desk(tools));
      expect(problems).toHaveLength(1);
      return problems[0]!;
    };

    it('a plain function without its input type', async () => {
      expect(await problemOf('- ./code-tools.ts#refund')).toMatchObject({
        keyPath: 'listeners[0].tools[0]',
        message:
          'tool `./code-tools.ts#refund` of agent `desk` is a plain function, so its input type must be given: write `{use: ./code-tools.ts#refund, input: <payload type>}`, or export it made with `defineTool({description, input, run})`',
      });
    });

    it('an input type for a defineTool tool, which carries its own', async () => {
      expect(await problemOf('- {use: ./code-tools.ts#lookupOrder, input: RefundRequest}')).toMatchObject({
        keyPath: 'listeners[0].tools[0].input',
        message: 'tool `./code-tools.ts#lookupOrder` of agent `desk` is made with `defineTool`, which carries its input type; remove `input` here',
      });
    });

    it('an unknown input type', async () => {
      expect(await problemOf('- {use: ./code-tools.ts#refund, input: RefundRequst}')).toMatchObject({
        keyPath: 'listeners[0].tools[0].input',
        message: 'unknown payload type `RefundRequst`; did you mean `RefundRequest`?',
      });
    });

    it('a missing export, with the closest function or tool export', async () => {
      expect(await problemOf('- ./code-tools.ts#lookupOrdr')).toMatchObject({
        keyPath: 'listeners[0].tools[0]',
        message: 'tool `lookupOrdr` of agent `desk`: module `./code-tools.ts` has no export `lookupOrdr`; did you mean `lookupOrder`?',
      });
    });

    it('an export that is neither a function nor a tool', async () => {
      expect(await problemOf('- {use: ./code-tools.ts#notATool, input: RefundRequest}')).toMatchObject({
        keyPath: 'listeners[0].tools[0].use',
        message:
          'tool `./code-tools.ts#notATool` of agent `desk` is not a function or a `defineTool` tool (got number); export `async (input, ctx) => ...` or `defineTool({description, input, run})`',
      });
    });

    it('a module that is not there', async () => {
      expect(await problemOf('- ./missing.ts#lookupOrder')).toMatchObject({
        keyPath: 'listeners[0].tools[0]',
        message: `tool module \`./missing.ts\` of agent \`desk\` not found (looked for ${path.join(FIXTURES, 'missing.ts')}); fix the path, which is relative to the config file`,
      });
    });

    it('a module that fails to load is reported once, however many tools it has', async () => {
      const problem = await problemOf('- ./fails-on-load.ts#one', '- ./fails-on-load.ts#two');
      expect(problem.keyPath).toBe('listeners[0].tools[0]');
      expect(problem.message).toMatch(/^tool module `\.\/fails-on-load\.ts` of agent `desk` failed to load: .*boom while loading/);
    });

    it('a malformed reference', async () => {
      expect(await problemOf('- tools.ts')).toMatchObject({
        keyPath: 'listeners[0].tools[0]',
        message: 'malformed tool `tools.ts`: expected `./path/to/module.ts#exportName` (relative to the config file)',
      });
      expect(await problemOf('- 42')).toMatchObject({ keyPath: 'listeners[0].tools[0]', message: 'expected `./module.ts#export` or a mapping with `use`, got 42' });
      expect(await problemOf('- {input: RefundRequest}')).toMatchObject({ keyPath: 'listeners[0].tools[0].use', message: 'missing required key `use`; add `use: ...` here' });
      expect(await problemOf('- {use: ./code-tools.ts#lookupOrder, timeout_seconds: 0}')).toMatchObject({
        keyPath: 'listeners[0].tools[0].timeout_seconds',
        message: 'expected a positive number, got 0',
      });
    });
  });

  it('only LLM agents that answer with tool calls have tools', async () => {
    const onCode = await problemsOf(y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          tools: [./code-tools.ts#lookupOrder]
    `);
    expect(onCode).toEqual([
      expect.objectContaining({
        keyPath: 'listeners[0].tools',
        message: '`tools` is only valid for `builtin:llm` listeners (a code handler calls its functions itself); remove it',
      }),
    ]);
    const xml = await problemsOf(desk(['- ./code-tools.ts#lookupOrder'], ['reply_format: xml']));
    expect(xml).toEqual([
      expect.objectContaining({
        keyPath: 'listeners[0].tools',
        message: 'agent `desk` has `tools` but answers with `reply_format: xml`, where no tools are offered; use `reply_format: tools` (the default) or remove `tools`',
      }),
    ]);
  });

  it('the example of docs/configuration.md loads as written (organism.yaml and tools.ts)', async () => {
    const doc = readFileSync(path.join(FIXTURES, '..', '..', '..', 'docs', 'configuration.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Code tools (`tools:`)'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    const ts = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml && ts).toBeTruthy();
    const dir = mkdtempSync(path.join(tmpdir(), 'code-tools-doc-'));
    dirs.push(dir);
    const head = 'organism: {name: docs}\nllm:\n  providers:\n    - {name: openai, type: openai, models: [gpt-4o]}\n';
    const outbox = '  - {name: outbox, handler: ./tools.ts#findOrder, payload: OrderQuery}\n';
    writeFileSync(path.join(dir, 'organism.yaml'), head + yaml! + outbox);
    writeFileSync(path.join(dir, 'tools.ts'), ts!);
    const loaded = await loadOrganism(path.join(dir, 'organism.yaml'));
    const tools = loaded.listeners.find((l) => l.config.name === 'desk')!.tools!;
    expect(tools.map((t) => [t.name, t.description, t.input.name, t.timeoutSeconds])).toEqual([
      ['lookupOrder', 'Looks an order up by its id', 'OrderLookup', 10],
      ['findOrder', 'Finds an order by its id', 'OrderQuery', 5],
    ]);
    expect(await tools[1]!.run({ orderId: 'A-1' }, {} as never)).toBe('order A-1 is on its way');
  });
});
