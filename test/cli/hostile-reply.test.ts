import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { openAiOk, startProtocolServer } from '../llm/protocol-server.js';
import { cpuMsOf, killAll, organismDir, startServer } from './processes.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  killAll();
  while (closers.length) await closers.pop()!();
});

const MB = 1 << 20;
const unclosedSends = '<send'.repeat(100_000) + 'x'.repeat(MB - 500_000);
const longGoal = 'g'.repeat(MB - 100);
const validLong = `<send to="worker"><Task><goal>${longGoal}</goal></Task></send>`;
const tooLarge = `<send to="worker"><Task><goal>${'z'.repeat(3 * MB)}</goal></Task></send>`;
const sends = (n: number) => Array.from({ length: n }, (_, i) => `<send to="worker"><Task><goal>${i}</goal></Task></send>`).join('');

describe('hostile LLM replies against the real server', () => {
  it('keeps /health answering and the CPU bounded while 1 MB replies are parsed; applies both reply caps', { timeout: 240_000 }, async () => {
    // An OpenAI-compatible server answering each call with the next of these replies.
    const llm = await startProtocolServer([
      { body: openAiOk(unclosedSends) }, // thread 1, first answer: 100k unclosed <send
      { body: openAiOk(validLong) }, // thread 1, repair: valid, with 1 MB of text in one field
      { body: openAiOk(tooLarge) }, // thread 2: over max_reply_bytes, not parsed, no repair
      { body: openAiOk(sends(6)) }, // thread 3: over max_messages_per_reply, twice
    ]);
    closers.push(() => llm.close());
    const dir = organismDir(
      `organism: {name: hostile}
max_tokens_per_thread: 100000000 # the repair round carries the 1 MB answer back
llm:
  max_reply_bytes: ${2 * MB}
  max_messages_per_reply: 5
  providers:
    - {name: local, type: openai, base_url: "${llm.url}", models: [gpt-], max_retries: 0, reply_format: xml}
payloads:
  Ask: {fields: {text: string}}
  Task: {fields: {goal: string}}
listeners:
  - name: boss
    handler: builtin:llm
    prompt: Delegate to the worker.
    model: gpt-4o
    peers: [worker]
    payload: Ask
  - name: worker
    handler: ./worker.ts#work
    payload: Task
`,
      {
        'worker.ts': `import { appendFileSync } from 'node:fs';\nexport const work = (p: { goal: string }) => appendFileSync(new URL('./got.log', import.meta.url), p.goal.length + '\\n');\n`,
      },
    );
    const server = await startServer(path.join(dir, 'organism.yaml'), ['--data-dir', path.join(dir, 'data')]);
    const pid = server.child.pid!;
    const inject = async (text: string) => {
      const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'boss', payload: { Ask: { text } } }) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { threadId: string }).threadId;
    };
    const settled = (threadId: string) =>
      server.until(
        async () => {
          const t = (await (await server.api(`/threads/${threadId}`)).json()) as { status: string; error: string | null };
          return t.status !== 'active' ? t : null;
        },
        `thread ${threadId} to end`,
        120_000,
      );

    const cpuBefore = cpuMsOf(pid);
    const first = await inject('go');
    // The moment the hostile answer has been sent, the server must still answer.
    await server.until(() => llm.seen.length >= 1, 'the first LLM call');
    const health = await fetch(`${server.base}/health`);
    expect(health.status).toBe(200);
    const firstThread = await settled(first);
    expect(firstThread.status, firstThread.error ?? '').toBe('completed');
    expect(llm.seen).toHaveLength(2);
    await server.until(() => readFileSync(path.join(dir, 'got.log'), 'utf8') === `${longGoal.length}\n`, 'the worker to get the 1 MB goal');
    // Two 1 MB answers parsed, a 1 MB message journaled and delivered: a few hundred ms of CPU
    // when parsing is linear (the quadratic patterns took minutes); generous for a loaded box.
    expect(cpuMsOf(pid) - cpuBefore).toBeLessThan(20_000);

    const second = await settled(await inject('again'));
    expect(second.status).toBe('error');
    expect(second.error).toContain(Errors.LLM_REPLY_TOO_LARGE('boss', Buffer.byteLength(tooLarge), 2 * MB).detail);
    expect(llm.seen).toHaveLength(3); // refused unread: no repair round

    const third = await settled(await inject('fan out'));
    expect(third.status).toBe('error');
    expect(third.error).toContain(Errors.LLM_INVALID_REPLY('boss', 'the reply sends 6 messages; at most 5 are allowed in one reply').detail);
    expect(llm.seen).toHaveLength(5);
    expect(readFileSync(path.join(dir, 'got.log'), 'utf8').split('\n').filter(Boolean)).toHaveLength(1); // none of the 12 queued
  });
});
