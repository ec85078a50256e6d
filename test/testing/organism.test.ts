import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { ConfigInvalidError } from '../../src/config/errors.js';
import { createTestOrganism, reply, scripted, send, toolCall, type TestOrganism } from '../../src/testing/index.js';
import { DESK_YAML, deskDir } from './desk.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function desk(
  options: { format?: 'tools' | 'xml'; llm?: Parameters<typeof createTestOrganism>[0]['llm']; store?: 'memory' | 'sqlite'; timeoutMs?: number } = {},
): Promise<TestOrganism> {
  const d = deskDir(options.format);
  cleanups.push(d.remove);
  const org = await createTestOrganism({
    config: d.config,
    ...(options.llm ? { llm: options.llm } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
  });
  cleanups.push(() => org.close());
  return org;
}

const route = (thread: { messages: readonly { from: string; to: string }[] }) => thread.messages.map((m) => `${m.from}->${m.to}`);

describe('createTestOrganism with the mock provider (when: branches)', () => {
  for (const format of ['tools', 'xml'] as const) {
    it(`routes a billing ticket to billing and another to tech, offline (${format} format)`, async () => {
      const org = await desk({ format });
      const [billing, tech, byText] = await Promise.all([
        org.run('triage', { category: 'billing', text: 'card declined' }),
        org.run('triage', { category: 'hardware', text: 'fan is loud' }),
        org.run('triage', { category: 'other', text: 'where is my Invoice?' }),
      ]);
      expect(route(billing)).toEqual(['api->triage', 'triage->billing', 'billing->outbox']);
      expect(route(tech)).toEqual(['api->triage', 'triage->tech', 'tech->outbox']);
      expect(route(byText)).toEqual(['api->triage', 'triage->billing', 'billing->outbox']);
      expect(tech.messages.at(-1)?.payload).toEqual({ text: 'Tech will look at: fan is loud' });
      expect(billing.logs).toContainEqual(expect.objectContaining({ listener: 'outbox', msg: 'answered', text: 'Billing will look at: card declined', from: 'billing' }));
      expect(billing.status).toBe('completed');
      expect(billing.usage.calls).toBe(2);
      expect(billing.usage.cost).toBeGreaterThan(0);
    });
  }

  it('answers at once: the mock latency of organism.yaml is left out unless asked for', async () => {
    const org = await desk();
    const thread = await org.run('triage', { category: 'billing', text: 'x' });
    expect(thread.llmCalls.every((c) => c.latencyMs < 200)).toBe(true); // latency_ms is 200-400 in the file
  });
});

describe('settled()', () => {
  it('rejects after the timeout, naming the deliveries still open', async () => {
    const org = await desk({ timeoutMs: 300 });
    await org.pause('billing');
    const thread = await org.inject('triage', { category: 'billing', text: 'stuck' });
    const err = await thread.settled().then(
      () => null,
      (e: unknown) => e,
    );
    expect(Errors.TEST_THREAD_NOT_SETTLED.is(err)).toBe(true);
    expect((err as Error).message).toBe(`thread ${thread.id} did not settle within 300 ms (status active; open deliveries: triage -> billing (PENDING, listener paused))`);
    await org.resume('billing');
    expect((await thread.settled({ timeoutMs: 5_000 })).status).toBe('completed');
  });

  it('resolves for a killed thread, and for one that settled before it was asked', async () => {
    const org = await desk();
    await org.pause('tech');
    const thread = await org.inject('triage', { category: 'hardware', text: 'x' });
    await org.kill(thread.id);
    expect((await thread.settled()).status).toBe('killed');
    const done = await org.inject('triage', { category: 'billing', text: 'y' });
    await done.settled();
    expect((await org.thread(done.id).settled()).status).toBe('completed');
  });
});

describe('createTestOrganism with a scripted model', () => {
  it('hands reply functions the request: agent, sender, typed payload, tools offered, round and turn; code tools run inside the turn', async () => {
    const llm = scripted({
      triage: (req) =>
        send(req.payload['priority'] === 1 ? 'billing' : 'tech', { category: String(req.payload['category']), text: String(req.payload['text']), priority: req.payload['priority'] }),
      billing: (req) => {
        if (req.format === 'xml') return send('outbox', { text: `xml, priority ${typeof req.payload['priority']}` });
        return req.round === 0
          ? toolCall('lookupOrder', { orderId: '7' })
          : send('outbox', { text: `order ${JSON.parse(req.toolResults[0]!.content).status}; offered ${req.tools.map((t) => t.name).join(',')}` });
      },
    });
    for (const format of ['tools', 'xml'] as const) {
      const org = await desk({ llm, format });
      if (format === 'xml') {
        // No tools are offered in the XML format; the payload still arrives typed (priority 1 routes to billing).
        const thread = await org.run('triage', { category: 'x', text: 'y', priority: 1 });
        expect(route(thread)).toEqual(['api->triage', 'triage->billing', 'billing->outbox']);
        expect(thread.messages.at(-1)?.payload).toEqual({ text: 'xml, priority number' });
        // tech has no script: its call fails, naming the agents the script answers.
        const unscripted = await org.run('triage', { category: 'x', text: 'y', priority: 2 });
        expect(unscripted.status).toBe('error');
        expect(unscripted.messages[1]).toMatchObject({ to: 'tech', state: 'FAILED' });
        expect(unscripted.messages[1]?.error).toContain('no scripted reply for agent "tech" (the script answers "triage", "billing")');
        continue;
      }
      const thread = await org.run('triage', { category: 'refund', text: 'where is order 7', priority: 1 });
      expect(route(thread)).toEqual(['api->triage', 'triage->billing', 'billing->outbox']);
      expect(thread.messages.at(-1)?.payload).toEqual({ text: 'order shipped; offered send_to_outbox,reply,lookupOrder' });
      expect(thread.toolCalls.map((t) => [t.agent, t.kind, t.tool, t.result])).toEqual([['billing', 'code', 'lookupOrder', '{"orderId":"7","status":"shipped"}']]);
      const billing = llm.requests.filter((r) => r.agent === 'billing' && r.threadId === thread.id);
      expect(billing.map((r) => [r.round, r.turn, r.from, r.payloadType, r.format])).toEqual([
        [0, 0, 'triage', 'Ticket', 'tools'],
        [1, 1, 'triage', 'Ticket', 'tools'],
      ]);
    }
  });

  it('plays lists of replies in turn, the last repeating, in both formats; a reply to the API names its type', async () => {
    for (const format of ['tools', 'xml'] as const) {
      const llm = scripted({
        triage: [reply({ text: 'first' }, 'Answer'), '<reply><Answer><text>second</text></Answer></reply>', [send('tech', { category: 'c', text: 'third' })]],
        tech: '<done/>',
      });
      const org = await desk({ llm, format });
      const first = await org.run('triage', { category: 'c', text: 't' });
      const second = await org.run('triage', { category: 'c', text: 't' }, { threadId: first.id });
      const third = await org.run('triage', { category: 'c', text: 't' }, { threadId: first.id });
      const fourth = await org.run('triage', { category: 'c', text: 't' }, { threadId: first.id });
      expect(fourth.messages.filter((m) => m.from === 'triage').map((m) => `${m.to} ${m.payloadType} ${JSON.stringify(m.payload)}`)).toEqual([
        'api Answer {"text":"first"}',
        'api Answer {"text":"second"}',
        'tech Ticket {"category":"c","text":"third"}',
        'tech Ticket {"category":"c","text":"third"}',
      ]);
      expect([first, second, third].every((t) => t.status === 'completed')).toBe(true);
    }
  });

  it('fails the call with a clear error when a message needs its type named', async () => {
    const org = await desk({ llm: scripted({ triage: reply({ text: 'which type?' }) }) });
    const thread = await org.run('triage', { category: 'c', text: 't' });
    expect(thread.status).toBe('error');
    expect(thread.messages[0]?.error).toContain(`the scripted reply of agent "triage" sends to api, which accepts any type: name the type, reply(payload, 'Type')`);
  });

  it('refuses tool calls for an agent answering in the XML format', async () => {
    const org = await desk({ format: 'xml', llm: scripted({ triage: toolCall('lookupOrder', { orderId: '1' }) }) });
    const thread = await org.run('triage', { category: 'c', text: 't' });
    expect(thread.messages[0]?.error).toContain(Errors.TEST_SCRIPT_CALLS_IN_XML('triage').message);
  });
});

describe('createTestOrganism stores and config', () => {
  it('runs on a temporary SQLite store and removes it at close (also through Symbol.asyncDispose)', async () => {
    const before = new Set(readdirSync(os.tmpdir()).filter((f) => f.startsWith('organism-test-')));
    const d = deskDir();
    cleanups.push(d.remove);
    const org = await createTestOrganism({ config: d.config, store: 'sqlite' });
    const created = readdirSync(os.tmpdir()).filter((f) => f.startsWith('organism-test-') && !before.has(f));
    expect(created).toHaveLength(1);
    const thread = await org.run('triage', { category: 'billing', text: 'kept' });
    expect(route(thread)).toEqual(['api->triage', 'triage->billing', 'billing->outbox']);
    expect(thread.llmCalls).toHaveLength(2);
    await org[Symbol.asyncDispose]();
    expect(existsSync(`${os.tmpdir()}/${created[0]}`)).toBe(false);
    await org.close(); // twice is fine
  });

  it('takes organism.yaml as text, with substitutions from env; refuses a provider key that is unset unless a scripted model answers', async () => {
    const d = deskDir();
    cleanups.push(d.remove);
    const yaml = DESK_YAML()
      // biome-ignore lint/suspicious/noTemplateCurlyInString: organism.yaml's substitution syntax
      .replace('name: desk', 'name: ${DESK_NAME:-desk}')
      .replace('  providers:\n', '  providers:\n    - name: real\n      type: openai\n      api_key_env: DESK_TEST_UNSET_KEY\n      priority: 0\n');
    const err = await createTestOrganism({ config: { yaml, dir: d.dir }, env: { DESK_NAME: 'desk-2' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigInvalidError);
    expect((err as ConfigInvalidError).problems.map((p) => p.message).join(' ')).toContain('DESK_TEST_UNSET_KEY');
    const org = await createTestOrganism({ config: { yaml, dir: d.dir }, env: { DESK_NAME: 'desk-2' }, llm: scripted({ triage: '<done/>' }) });
    cleanups.push(() => org.close());
    expect(org.name).toBe('desk-2');
    expect((await org.run('triage', { category: 'c', text: 't' })).status).toBe('completed');
  });

  it('throws the API error for an invalid inject', async () => {
    const org = await desk();
    await expect(org.inject('triage', { category: 3 })).rejects.toThrow(/category/);
    await expect(org.inject('nobody', { text: 'x' })).rejects.toThrow(Errors.UNKNOWN_TARGET('nobody').message);
  });
});
