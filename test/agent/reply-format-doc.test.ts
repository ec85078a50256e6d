import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildSystemPrompt } from '../../src/agent/prompt.js';
import { parseAgentReply } from '../../src/agent/reply.js';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { PayloadRegistry } from '../../src/payload/index.js';

/** docs/configuration.md teaches the builtin:llm reply format; what it says must be true. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DOC = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');

function section(heading: string): string {
  const start = DOC.indexOf(`\n${heading}\n`);
  expect(start, `docs/configuration.md has no "${heading}"`).toBeGreaterThan(0);
  const rest = DOC.slice(start + heading.length + 2);
  const next = rest.search(/\n#{2,3} /);
  return next < 0 ? rest : rest.slice(0, next);
}

const organisms: Organism[] = [];
afterAll(async () => {
  for (const o of organisms) await o.stop({ timeoutMs: 2_000 });
});

describe('docs: how a builtin:llm agent answers', () => {
  it('the complete example runs as documented: nested type, list, two messages, a reply, done', async () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section('### A complete example'))?.[1];
    expect(yaml).toBeDefined();
    const loaded = await loadOrganismFromString(yaml!, path.join(ROOT, 'examples', 'demo', 'organism.yaml'));
    const organism = new Organism(loaded);
    organisms.push(organism);
    await organism.start();
    const { threadId } = await organism.inject('planner', { Trip: { who: 'Ada' } });
    const deadline = Date.now() + 15_000;
    while ((await organism.thread(threadId))?.status === 'active' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect((await organism.thread(threadId))?.status).toBe('completed');
    const page = await organism.storage.journal.list({ threadId, limit: 10, offset: 0, order: 'oldest' });
    expect(page.items.map((e) => [e.message.from, e.message.to, e.message.payloadType, e.message.payload])).toEqual([
      ['api', 'planner', 'Trip', { who: 'Ada' }],
      ['planner', 'booker', 'Booking', { traveller: { name: 'Ada', email: 'ada@example.com' }, stops: ['Lisbon', 'Porto'], nights: 3 }],
      ['planner', 'api', 'Plan', { summary: 'Booked 2 stops for Ada' }],
    ]);
  });

  it('quotes the reply format the model is shown, word for word', async () => {
    const quoted = /```text\n([\s\S]*?)```/.exec(section('### What the model is shown'))?.[1];
    const text = quoted!
      .split('\n')
      .map((l) => l.replace(/^ {3}/, ''))
      .join('\n')
      .trim();
    const loaded = await loadOrganismFromString(/```yaml\n([\s\S]*?)```/.exec(section('### A complete example'))![1]!, path.join(ROOT, 'x.yaml'));
    const planner = loaded.listeners.find((l) => l.config.name === 'planner')!;
    const prompt = buildSystemPrompt({ listener: planner.config, peers: [], sender: 'api', replyTypes: null });
    expect(prompt).toContain(text);
  });

  it('the usual first mistake (a list without <item>) is refused with the documented text', async () => {
    const loaded = await loadOrganismFromString(/```yaml\n([\s\S]*?)```/.exec(section('### A complete example'))![1]!, path.join(ROOT, 'x.yaml'));
    const registry = new PayloadRegistry(loaded.payloadTypes);
    const booking = registry.get('Booking')!;
    const answer = '<send to="booker"><Booking><traveller><name>Ada</name></traveller><stops>Lisbon</stops><stops>Porto</stops><nights>3</nights></Booking></send>';
    const parsed = parseAgentReply(answer, { peers: [{ name: 'booker', description: '', types: [booking] }], replyTypes: null, registry, maxMessages: 20 });
    expect(parsed.ok).toBe(false);
    const documented = /refused as `([^`]+)`/.exec(section('### The answer'))?.[1];
    expect(documented).toBe('stops: <stops> appears 2 times; expected once');
    expect(parsed.ok ? [] : parsed.errors.join('\n')).toContain(documented);
  });
});
