import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { latencySequence, MockProvider } from '../../src/llm/providers/mock.js';
import type { ChatMessage, CompletionRequest } from '../../src/llm/types.js';
import { call, makeRouter, providerConfig, rejection } from './helpers.js';

/** An incoming payload as the builtin:llm agent wraps it. */
const incoming = (xml: string, from = 'api') => `<message from="${from}">\n${xml}\n</message>`;
const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });

function mock(script: Record<string, string[]> = {}, mockLatencyMs = 0) {
  return new MockProvider(providerConfig({ name: 'mock', type: 'mock', script, mockLatencyMs }));
}
const ask = (p: MockProvider, messages: ChatMessage[], agent = 'agent-a', over: Partial<CompletionRequest> = {}) =>
  p.complete({ model: 'mock-1', system: 'You are a test.', messages, maxOutputTokens: 500, agent, ...over }, new AbortController().signal);

describe('mock provider', () => {
  it('plays each agent its own script in turn order (turn = earlier assistant messages); the last template repeats', async () => {
    const p = mock({ 'agent-a': ['first', 'second', 'third'], 'agent-b': ['b only'] });
    const q = incoming('<Question><text>x</text></Question>');
    const turns = [[user(q)], [user(q), assistant('1'), user(q)], [user(q), assistant('1'), user(q), assistant('2'), user(q)]];
    const more = [...turns[2]!, assistant('3'), user(q), assistant('4'), user(q)];
    const replies = await Promise.all([...turns, more].map((m) => ask(p, m)));
    expect(replies.map((r) => r.content)).toEqual(['first', 'second', 'third', 'third']);
    expect((await ask(p, [user(q), assistant('1'), user(q)], 'agent-b')).content).toBe('b only');
  });

  it('fills {{field}}, {{field|upper}} and {{field|lower}} from the latest payload, XML-escaped; unknown fields are empty', async () => {
    const p = mock({ 'agent-a': ['<t>{{text}}|{{text|upper}}|{{ Name | lower }}|{{missing}}</t>'] });
    const r = await ask(p, [user(incoming('<Question><text>a &amp; b &lt;c&gt;</text><Name>Dan</Name></Question>'))]);
    expect(r.content).toBe('<t>a &amp; b &lt;c&gt;|A &amp; B &lt;C&gt;|dan|</t>');
  });

  it('reads the last payload of a user turn that holds several', async () => {
    const p = mock({ 'agent-a': ['{{text}}'] });
    const merged = `${incoming('<Q><text>older</text></Q>', 'a')}\n${incoming('<Q><text>newest</text></Q>', 'b')}`;
    expect((await ask(p, [user(merged)])).content).toBe('newest');
  });

  it('skips user turns without a payload (a repair request) and reads the payload before', async () => {
    const p = mock({ 'agent-a': ['first {{text}}', 'repaired {{text}}'] });
    const r = await ask(p, [user(incoming('<Q><text>kept</text></Q>')), assistant('oops'), user('Your reply was invalid: no <send> element found. Try again.')]);
    expect(r.content).toBe('repaired kept');
  });

  it('reads a bare XML payload (no message wrapper)', async () => {
    const p = mock({ 'agent-a': ['{{topic}}'] });
    expect((await ask(p, [user('<Findings><topic>bees</topic></Findings>')])).content).toBe('bees');
  });

  it('derives a deterministic reply from the input when the agent has no script', async () => {
    const p = mock({ other: ['not for agent-a'] });
    const m = [user(incoming('<Question><text>hello</text><n>2</n></Question>'))];
    const a = await ask(p, m);
    const b = await ask(p, m);
    expect(a.content).toBe(b.content);
    expect(a.content).toBe('Noted 2 field(s): hello, 2\n<done/>');
  });

  it('counts tokens realistically: ceil(chars/4) of system and messages, and of the reply', async () => {
    const p = mock({ 'agent-a': ['a reply of some length'] });
    const messages = [user(incoming('<Q><text>abc</text></Q>')), assistant('ok'), user('xyz')];
    const r = await ask(p, messages);
    const expectedPrompt = Math.ceil('You are a test.'.length / 4) + messages.reduce((n, m) => n + Math.ceil(m.content.length / 4), 0);
    expect(r.usage).toEqual({
      promptTokens: expectedPrompt,
      completionTokens: Math.ceil('a reply of some length'.length / 4),
      totalTokens: expectedPrompt + Math.ceil('a reply of some length'.length / 4),
      cacheReadTokens: null,
      cacheWriteTokens: null,
      reasoningTokens: null,
    });
    expect((await ask(p, messages, 'agent-a', { maxOutputTokens: 2 })).usage.completionTokens).toBe(2);
  });

  it('honours the abort signal during its simulated latency', async () => {
    const p = mock({}, 60_000);
    const c = new AbortController();
    const pending = p.complete({ model: 'mock-1', system: '', messages: [user('x')], maxOutputTokens: 10 }, c.signal);
    setTimeout(() => c.abort('killed'), 10);
    const err = await rejection(pending); // a minute-long latency would time the test out
    expect(err.message).toBe(Errors.ABORTED('killed').detail);
  });

  it('draws latencies uniformly from [min, max], the same sequence for the same seed', () => {
    const draw = (seed: number) => {
      const next = latencySequence(200, 1500, seed);
      return Array.from({ length: 2000 }, () => next());
    };
    const a = draw(7);
    expect(draw(7)).toEqual(a);
    expect(draw(8)).not.toEqual(a);
    for (const v of a) {
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(200);
      expect(v).toBeLessThanOrEqual(1500);
    }
    // Spread over the whole range: every tenth of it is hit.
    const tenths = new Set(a.map((v) => Math.min(9, Math.floor((v - 200) / 130.1))));
    expect(tenths.size).toBe(10);
    const fixed = latencySequence(25, undefined, 1);
    expect([fixed(), fixed()]).toEqual([25, 25]);
  });

  it('answers after its simulated latency', async () => {
    const p = mock({ 'agent-a': ['late'] }, 20);
    expect((await ask(p, [user('x')])).content).toBe('late');
  });

  it('through the router: scripted per calling agent, one usage event with provider mock', async () => {
    const t = makeRouter([providerConfig({ name: 'mock', type: 'mock', script: { writer: ['<done/>'] } })], {
      pricing: { 'mock-': { prompt: 0.5, completion: 1.5, cacheRead: null, cacheWrite: null } },
    });
    const r = await t.router.complete({ model: 'mock-1', system: 's', messages: [user(incoming('<Q><text>x</text></Q>'))], maxOutputTokens: 100 }, call(undefined, { agent: 'writer' }));
    expect(r.content).toBe('<done/>');
    expect(t.events).toHaveLength(1);
    expect(t.events[0]).toMatchObject({ provider: 'mock', agentId: 'writer', model: 'mock-1' });
    expect(t.events[0]!.cost).toBeCloseTo((r.usage.promptTokens * 0.5 + r.usage.completionTokens * 1.5) / 1e6, 12);
  });
});

describe('mock provider with tools', () => {
  const findings = {
    name: 'send_to_writer',
    description: 'Send findings',
    parameters: {
      type: 'object',
      properties: {
        topic: { type: 'string' },
        count: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
        urgent: { type: 'boolean' },
        source: { $ref: '#/$defs/Source' },
      },
      $defs: { Source: { type: 'object', properties: { pages: { type: 'number' } } } },
    },
  };
  const tools = [findings, { name: 'reply', description: 'r', parameters: { type: 'object', properties: { payloadType: { type: 'string' }, payload: { type: 'object' } } } }];

  it('turns a text step’s <send> and <reply> into tool calls, reading the payload XML by the tool schema; deltas and usage are reported', async () => {
    const p = mock({
      'agent-a': [
        'Here. <send to="writer"><Findings><topic>{{text}}</topic><count>3</count><tags><item>a</item><item>b</item></tags><urgent>true</urgent><source><pages>2.5</pages></source></Findings></send><reply><Answer><text>ok</text></Answer></reply><done/>',
      ],
    });
    const deltas: string[] = [];
    const usage: unknown[] = [];
    const res = await p.complete(
      { model: 'mock-1', system: 's', messages: [user('<message from="api" type="Question">\n{"text":"tides"}\n</message>')], maxOutputTokens: 500, agent: 'agent-a', tools },
      new AbortController().signal,
      { onDelta: (t) => deltas.push(t), onUsage: (u) => usage.push(u) },
    );
    expect(res.content).toBe('Here.');
    expect(deltas.join('')).toBe('Here.');
    expect(usage).toHaveLength(1);
    expect(res.finishReason).toBe('tool_calls');
    expect(res.toolCalls!.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['send_to_writer', { topic: 'tides', count: 3, tags: ['a', 'b'], urgent: true, source: { pages: 2.5 } }],
      ['reply', { payloadType: 'Answer', payload: { text: 'ok' } }],
    ]);
  });

  it('plays scripted calls as written: templates filled, string arguments verbatim, the latest tool result as {{result}}', async () => {
    const p = new MockProvider(
      providerConfig({
        name: 'mock',
        type: 'mock',
        script: {
          'agent-a': [
            {
              text: 'looking',
              calls: [
                { name: 'x_lookup', arguments: { q: '{{text|upper}}' } },
                { name: 'send_to_writer', arguments: '{"broken": ' },
              ],
            },
            { calls: [{ name: 'send_to_writer', arguments: { topic: '{{result}}' } }] },
          ],
        },
      }),
    );
    const first = await ask(p, [user(incoming('<Q><text>tides</text></Q>'))], 'agent-a', { tools });
    expect(first.content).toBe('looking');
    expect(first.toolCalls).toEqual([
      { id: 'call_mock_1', name: 'x_lookup', arguments: '{"q":"TIDES"}' },
      { id: 'call_mock_2', name: 'send_to_writer', arguments: '{"broken": ' },
    ]);
    const second = await ask(
      p,
      [
        user(incoming('<Q><text>tides</text></Q>')),
        { role: 'assistant', content: '', toolCalls: first.toolCalls! },
        { role: 'tool', toolCallId: 'call_mock_1', name: 'x_lookup', content: 'high at noon' },
      ],
      'agent-a',
      { tools },
    );
    expect(JSON.parse(second.toolCalls![0]!.arguments)).toEqual({ topic: 'high at noon' });
  });
});
