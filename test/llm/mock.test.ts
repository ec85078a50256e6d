import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { latencySequence, MockProvider } from '../../src/llm/providers/mock.js';
import type { ProviderConfig } from '../../src/config/types.js';
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

describe('mock provider script branches (when:)', () => {
  const branched = (script: ProviderConfig['script']) => new MockProvider(providerConfig({ name: 'mock', type: 'mock', script }));
  const triage = branched({
    triage: [
      { when: { category: 'billing' }, steps: ['<send to="billing"><Ticket><text>{{text}}</text></Ticket></send>'] },
      { when: { text: '/refund|invoice/i' }, steps: ['billing by text'] },
      { when: { priority: [1, 2] }, steps: ['urgent'] },
      { when: { 'customer.tier': 'gold' }, steps: ['gold', 'gold again'] },
      { steps: ['<send to="tech"><Ticket><text>{{text}}</text></Ticket></send>'] },
    ],
  });
  const ticket = (fields: string) => [user(`<message from="api" type="Ticket">\n${fields}\n</message>`)];

  it('answers with the steps of the first branch whose when the incoming payload matches; a branch without when takes the rest', async () => {
    expect((await ask(triage, ticket('{"category":"billing","text":"card declined"}'), 'triage')).content).toBe('<send to="billing"><Ticket><text>card declined</text></Ticket></send>');
    expect((await ask(triage, ticket('{"category":"other","text":"Please send my INVOICE"}'), 'triage')).content).toBe('billing by text');
    expect((await ask(triage, ticket('{"category":"other","text":"x","priority":2}'), 'triage')).content).toBe('urgent');
    expect((await ask(triage, ticket('{"category":"other","text":"x","customer":{"tier":"gold"}}'), 'triage')).content).toBe('gold');
    expect((await ask(triage, ticket('{"category":"other","text":"my screen is black"}'), 'triage')).content).toBe('<send to="tech"><Ticket><text>my screen is black</text></Ticket></send>');
  });

  it('matches the XML format by text (3 matches "3"), and counts turns within the thread for the chosen steps', async () => {
    const xml = [user(incoming('<Ticket><category>x</category><text>t</text><customer><tier>gold</tier></customer></Ticket>'))];
    expect((await ask(triage, xml, 'triage', { threadId: 'th-1' })).content).toBe('gold');
    expect((await ask(triage, xml, 'triage', { threadId: 'th-1' })).content).toBe('gold again');
    const numeric = [user(incoming('<Ticket><category>x</category><text>t</text><priority>1</priority></Ticket>'))];
    expect((await ask(triage, numeric, 'triage')).content).toBe('urgent');
  });

  it('falls back on the derived reply when no branch matches', async () => {
    const p = branched({ triage: [{ when: { category: 'billing' }, steps: ['billing'] }] });
    expect((await ask(p, ticket('{"category":"tech"}'), 'triage')).content).toBe('Noted 1 field(s): tech\n<done/>');
  });

  it('routes a triage agent in tools mode: the chosen branch becomes the call of that peer', async () => {
    const tools = ['billing', 'tech'].map((peer) => ({ name: `send_to_${peer}`, description: peer, parameters: { type: 'object', properties: { text: { type: 'string' } } } }));
    const billing = await ask(triage, ticket('{"category":"billing","text":"refund"}'), 'triage', { tools });
    const tech = await ask(triage, ticket('{"category":"hardware","text":"broken fan"}'), 'triage', { tools });
    expect(billing.toolCalls!.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['send_to_billing', { text: 'refund' }]]);
    expect(tech.toolCalls!.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['send_to_tech', { text: 'broken fan' }]]);
  });
});
