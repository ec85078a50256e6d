import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestOrganism, runHandler, scripted, send, type TestOrganism } from 'organism/testing';
import { uppercase } from './tools.js';

// The demo's own tests, written with organism/testing as a project's would be: offline, in
// this process, on a temporary store.
const config = new URL('./organism.yaml', import.meta.url);

let org: TestOrganism | undefined;
afterEach(async () => {
  await org?.close();
  org = undefined;
});

describe('the demo organism', () => {
  it('researches a question, writes the announcement and announces it in upper case (mock provider, tool calls)', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.run('researcher', { text: 'tides' });

    expect(thread.status).toBe('completed');
    expect(thread.messages.map((m) => `${m.from} -> ${m.to}: ${m.payloadType} ${m.state}`)).toEqual([
      'api -> researcher: Question ACKED',
      'researcher -> writer: Findings ACKED',
      'writer -> announcer: Announcement ACKED',
    ]);
    expect(thread.messages[2]?.payload).toEqual({ text: 'News on tides: Three sources agree on tides.' });
    expect(thread.logs).toContainEqual(expect.objectContaining({ listener: 'announcer', msg: 'announcement', text: 'NEWS ON TIDES: THREE SOURCES AGREE ON TIDES.' }));
    // Each agent answered once, with a call of its peer's tool.
    expect(thread.llmCalls.map((c) => [c.agent, c.response?.toolCalls.map((t) => t.name)])).toEqual([
      ['researcher', ['send_to_writer']],
      ['writer', ['send_to_announcer']],
    ]);
    expect(thread.usage.calls).toBe(2);
    expect(thread.usage.totalTokens).toBeGreaterThan(0);
    expect(thread.usage.cost).toBeGreaterThan(0); // priced: mock- in llm.pricing
  });

  it('runs the same script in the XML reply format', async () => {
    const yaml = readFileSync(config, 'utf8').replace('# reply_format: xml', 'reply_format: xml');
    org = await createTestOrganism({ config: { yaml, dir: fileURLToPath(new URL('.', config)) } });
    const thread = await org.run('researcher', { text: 'bees' });
    expect(thread.status).toBe('completed');
    expect(thread.messages.at(-1)?.payload).toEqual({ text: 'News on bees: Three sources agree on bees.' });
    expect(thread.llmCalls.every((c) => c.tools.length === 0 && c.response?.text?.includes('<send to='))).toBe(true);
  });

  it('takes a scripted model instead of the configured one: replies as functions of the request', async () => {
    const llm = scripted({
      researcher: (req) => send('writer', { topic: String(req.payload['text']), summary: `${req.tools.length} tools offered` }),
      writer: (req) => send('announcer', { text: `${req.payload['topic']}: ${req.payload['summary']}` }),
    });
    org = await createTestOrganism({ config, llm });
    const thread = await org.run('researcher', { text: 'volcanoes' });
    expect(thread.status).toBe('completed');
    // researcher is offered send_to_writer and reply.
    expect(thread.messages.at(-1)?.payload).toEqual({ text: 'volcanoes: 2 tools offered' });
    expect(llm.requests.map((r) => [r.agent, r.from, r.payloadType])).toEqual([
      ['researcher', 'api', 'Question'],
      ['writer', 'researcher', 'Findings'],
    ]);
  });

  it('keeps its state on a SQLite store too', async () => {
    org = await createTestOrganism({ config, store: 'sqlite' });
    const thread = await org.run('researcher', { text: 'comets' });
    expect(thread.status).toBe('completed');
    expect(thread.messages).toHaveLength(3);
    expect(thread.llmCalls).toHaveLength(2);
  });

  it('ends the thread in error when the model fails, naming why', async () => {
    org = await createTestOrganism({
      config,
      llm: scripted({
        researcher: () => {
          throw new Error('the model is down');
        },
      }),
    });
    const thread = await org.run('researcher', { text: 'storms' });
    expect(thread.status).toBe('error');
    expect(thread.messages[0]).toMatchObject({ to: 'researcher', state: 'FAILED' });
    expect(thread.messages[0]?.error).toContain('the model is down');
  });

  it('announcer: announces the text in upper case and sends nothing on', async () => {
    const run = await runHandler(uppercase, { text: 'hello' }, { self: 'announcer', from: 'writer', payloadType: 'Announcement' });
    expect(run.outgoing).toEqual([]);
    expect(run.ctx.logs).toEqual([expect.objectContaining({ level: 'info', msg: 'announcement', text: 'HELLO' })]);
  });
});
