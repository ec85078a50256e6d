import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/types.js';
import type { HandlerContext } from '../../src/core/handler.js';
import { send } from '../../src/core/handler.js';
import { definePayload } from '../../src/payload/define.js';
import { anthropicOk, startAnthropicServer } from '../llm/servers/anthropic-server.js';
import { openAiOk, startOpenAiServer } from '../llm/servers/openai-server.js';
import type { ScriptedServer } from '../llm/servers/scripted-server.js';
import { listener, mockProvider, settled, startOrganism, Text } from '../pump/harness.js';

const Task = definePayload('Task', { goal: 'string', priority: 'integer?' }, { description: 'Work to do' });
const Approval = definePayload('Approval', { task: 'string', approved: 'boolean' }, { description: 'A decision on a task' });
const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function server(replies: ReadonlyArray<{ body: unknown }>): Promise<ScriptedServer> {
  const s = await startOpenAiServer({ replies: [...replies] as never });
  servers.push(s);
  return s;
}

const provider = (url: string, extra: Partial<ProviderConfig> = {}): ProviderConfig => ({ ...mockProvider(), name: 'openai', type: 'openai', baseUrl: url, maxRetries: 0, ...extra });
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
type Body = { messages: Array<Record<string, unknown>>; tools?: Array<{ function: { name: string; description: string; parameters: Record<string, unknown> } }> };
type Got = { type: string; payload: unknown };

/** boss (LLM agent) -> desk, which accepts `payload: [Task, Approval]` and records what it is handed. */
async function organismWith(p: ProviderConfig, got: Got[]) {
  return startOrganism(
    [
      listener('boss', { handler: null, agent: true, peers: ['desk'], prompt: 'You delegate work.', model: 'gpt-4o' }),
      listener('desk', { payloadTypes: ['Task', 'Approval'], description: 'the desk', handler: (payload, ctx: HandlerContext) => void got.push({ type: ctx.payloadType, payload }) }),
    ],
    { llm: { providers: [p], pricing: {} } },
    {},
    [Text, Task, Approval],
  );
}

const byType = (got: Got[]) => [...got].sort((a, b) => a.type.localeCompare(b.type));

describe('an LLM agent with a peer of several payload types', () => {
  it('tools mode: one send_to_<peer> keyed by type; a call of each type reaches the peer as that type', async () => {
    const s = await server([
      {
        body: openAiOk(null, {}, 'gpt-4o', [
          call('call_1', 'send_to_desk', { Task: { goal: 'count sheep', priority: 2 } }),
          call('call_2', 'send_to_desk', { Approval: { task: 'count sheep', approved: true } }),
        ]),
      },
    ]);
    const got: Got[] = [];
    const { organism } = await organismWith(provider(s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(byType(got)).toEqual([
      { type: 'Approval', payload: { task: 'count sheep', approved: true } },
      { type: 'Task', payload: { goal: 'count sheep', priority: 2 } },
    ]);
    const body = s.seen[0]!.body as Body;
    expect(body.tools!.map((t) => t.function.name)).toEqual(['send_to_desk', 'reply']);
    const tool = body.tools![0]!.function;
    expect(tool.parameters).toMatchObject({ type: 'object', minProperties: 1, maxProperties: 1, additionalProperties: false });
    expect(Object.keys(tool.parameters['properties'] as object)).toEqual(['Task', 'Approval']);
    expect(tool.parameters['properties']).toMatchObject({ Task: { required: ['goal'] }, Approval: { required: ['task', 'approved'] } });
    expect(tool.description).toContain('Task (Work to do), Approval (A decision on a task)');
    const system = JSON.stringify(body.messages[0]);
    expect(system).toContain('`send_to_desk` with one payload of `Task`, `Approval`');
    await organism.stop();
  });

  it('tools mode: bare fields or a type the peer does not accept get the repair round with the reason', async () => {
    const s = await server([
      { body: openAiOk(null, {}, 'gpt-4o', [call('call_1', 'send_to_desk', { goal: 'bare' }), call('call_2', 'send_to_desk', { Text: { text: 'x' } })]) },
      { body: openAiOk(null, {}, 'gpt-4o', [call('call_3', 'send_to_desk', { Task: { goal: 'fixed' } })]) },
    ]);
    const got: Got[] = [];
    const { organism } = await organismWith(provider(s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ type: 'Task', payload: { goal: 'fixed' } }]);
    const results = JSON.stringify((s.seen[1]!.body as Body).messages.filter((m) => m['role'] === 'tool'));
    expect(results).toContain('goal is not one of the accepted payload types (Task, Approval)');
    expect(results).toContain('Text is not one of the accepted payload types (Task, Approval)');
    await organism.stop();
  });

  it('xml mode: the prompt shows each type and a <send> of each type is delivered as that type', async () => {
    const s = await server([
      {
        body: openAiOk('<send to="desk"><Task><goal>count sheep</goal></Task></send><send to="desk"><Approval><task>count sheep</task><approved>false</approved></Approval></send>'),
      },
    ]);
    const got: Got[] = [];
    const { organism } = await organismWith(provider(s.url, { replyFormat: 'xml' }), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(byType(got)).toEqual([
      { type: 'Approval', payload: { task: 'count sheep', approved: false } },
      { type: 'Task', payload: { goal: 'count sheep' } },
    ]);
    const system = JSON.stringify((s.seen[0]!.body as Body).messages[0]);
    expect(system).toContain('Accepts payload types `Task`, `Approval`');
    expect(system).toContain('<xs:element name=\\"Approval\\"');
    await organism.stop();
  });

  it('Anthropic: the keyed send_to_ tool is a top-level object input_schema, and tool_use blocks of each type are delivered', async () => {
    const toolUse = (id: string, input: unknown) => ({ type: 'tool_use', id, name: 'send_to_desk', input });
    const s = await startAnthropicServer({
      replies: [{ body: anthropicOk([toolUse('toolu_1', { Approval: { task: 't', approved: false } }), toolUse('toolu_2', { Task: { goal: 't' } })]) }],
    });
    servers.push(s);
    const got: Got[] = [];
    const { organism } = await organismWith(provider(s.url, { name: 'anthropic', type: 'anthropic', models: [] }), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(byType(got)).toEqual([
      { type: 'Approval', payload: { task: 't', approved: false } },
      { type: 'Task', payload: { goal: 't' } },
    ]);
    const tool = (s.seen[0]!.body as { tools: Array<{ name: string; input_schema: Record<string, unknown> }> }).tools[0]!;
    expect(tool.name).toBe('send_to_desk');
    expect(tool.input_schema).toMatchObject({ type: 'object', maxProperties: 1 });
    expect(tool.input_schema).not.toHaveProperty('oneOf');
    await organism.stop();
  });

  it('the mock provider turns a scripted <send> of either type into the keyed send_to_ call', async () => {
    const got: Got[] = [];
    const script = {
      boss: ['<send to="desk"><Approval><task>count sheep</task><approved>true</approved></Approval></send><send to="desk"><Task><goal>g</goal><priority>3</priority></Task></send>'],
    };
    const { organism } = await organismWith(mockProvider(script), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(byType(got)).toEqual([
      { type: 'Approval', payload: { task: 'count sheep', approved: true } },
      { type: 'Task', payload: { goal: 'g', priority: 3 } },
    ]);
    await organism.stop();
  });

  it('a reply validates against the sender’s types: a keyed reply of its second type reaches it as that type', async () => {
    const s = await server([{ body: openAiOk(null, {}, 'gpt-4o', [call('call_1', 'reply', { Approval: { task: 'count sheep', approved: true } })]) }]);
    const got: Got[] = [];
    const { organism } = await startOrganism(
      [
        listener('front', {
          payloadTypes: ['Task', 'Approval'],
          peers: ['helper'],
          handler: (payload, ctx) => (ctx.from === 'helper' ? void got.push({ type: ctx.payloadType, payload }) : send('helper', { text: String(payload['goal']) })),
        }),
        listener('helper', { handler: null, agent: true, model: 'gpt-4o' }),
      ],
      { llm: { providers: [provider(s.url)], pricing: {} } },
      {},
      [Text, Task, Approval],
    );
    const { threadId } = await organism.inject('front', { Task: { goal: 'count sheep' } });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ type: 'Approval', payload: { task: 'count sheep', approved: true } }]);
    const reply = (s.seen[0]!.body as Body).tools!.find((t) => t.function.name === 'reply')!.function;
    expect(Object.keys(reply.parameters['properties'] as object)).toEqual(['Task', 'Approval']);
    await organism.stop();
  });
});
