// Held threads (issue 30) in the console, in real Chromium against a real `organism serve`: an
// operator holds a running thread with a reason and resumes it from the thread page; a ping-pong
// held by the loop breaker shows why (its rule and evidence) and a viewer cannot resume it.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleFile, eventually, OP_TOKEN, VIEW_TOKEN } from './harness.js';

const YAML = `organism: {name: holds-console}
max_hops: 1000
auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}
payloads:
  Text: {fields: {text: string}}
listeners:
  - name: ping
    handler: ./talk.ts#ping
    payload: Text
    peers: [pong]
  - name: pong
    handler: ./talk.ts#pong
    payload: Text
    peers: [ping]
  - name: asker
    handler: ./talk.ts#ask
    payload: Text
    peers: [desk]
  - name: desk
    handler: builtin:human
    payload: Text
`;

const TALK = `export const ping = (p) => ({ to: 'pong', payload: { text: p.text } });
export const pong = (p) => ({ to: 'ping', payload: { text: p.text } });
export const ask = (p) => ({ to: 'desk', payload: { text: p.text } });
`;

const file = consoleFile({
  prepare: (dir) => {
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'talk.ts'), TALK);
  },
});

describe('held threads in the console', () => {
  it('an operator holds a thread with a reason from its page, sees it held, and resumes it', async () => {
    const injected = await file.server.api('POST', '/inject', { to: 'asker', payload: { text: 'may I?' } });
    const threadId: string = injected.body.threadId;
    await eventually(async () => (await file.server.api('GET', `/threads/${threadId}`)).body.status === 'waiting', 'the thread waiting');
    const page = await file.open(OP_TOKEN, `/threads/${threadId}`);
    const hold = page.getByRole('region', { name: 'Hold' });
    await hold.getByRole('textbox', { name: 'Reason' }).fill('checking with legal');
    await hold.getByRole('button', { name: 'Hold thread' }).click();
    await hold.getByLabel('Held because').waitFor();
    expect(await hold.getByLabel('Held because').textContent()).toBe('Held: checking with legal');
    await page.getByRole('heading', { level: 1 }).getByText('held', { exact: true }).waitFor();
    expect((await file.server.api('GET', `/threads/${threadId}`)).body).toMatchObject({ status: 'held', hold: { reason: 'checking with legal', by: 'ops' } });

    await hold.getByRole('button', { name: 'Resume', exact: true }).click();
    await hold.getByText(/resumed by ops/).waitFor();
    await page.getByRole('heading', { level: 1 }).getByText('waiting', { exact: true }).waitFor();
    expect((await file.server.api('GET', `/threads/${threadId}`)).body.status).toBe('waiting');
  });

  it('a thread the loop breaker held shows why; a viewer cannot resume it; an operator resumes it with raised limits', async () => {
    const injected = await file.server.api('POST', '/inject', { to: 'ping', payload: { text: 'same ball' } });
    const threadId: string = injected.body.threadId;
    await eventually(async () => (await file.server.api('GET', `/threads/${threadId}`)).body.status === 'held', 'the ping-pong held');

    const viewer = await file.open(VIEW_TOKEN, `/threads/${threadId}`);
    const seen = viewer.getByRole('region', { name: 'Hold' });
    await seen.getByLabel('Held because').waitFor();
    expect(await seen.getByLabel('Held because').textContent()).toMatch(
      /^Held: the cycle ping -> pong -> ping repeated 19 times without a new payload \(limit 18\)$|^Held: the cycle pong -> ping -> pong/,
    );
    expect(await seen.textContent()).toContain('loop_guard (the loop breaker (a cycle of agents repeating itself))');
    expect(await seen.getByRole('button', { name: 'Resume', exact: true }).isDisabled()).toBe(true);
    await viewer.close();

    const page = await file.open(OP_TOKEN, `/threads/${threadId}`);
    const hold = page.getByRole('region', { name: 'Hold' });
    await hold.getByText('Evidence').click();
    expect(await hold.textContent()).toContain('repetitions');
    await hold.getByRole('button', { name: 'Resume with raised limits' }).click();
    // It loops on, and the loop breaker holds it again at twice the limit.
    await eventually(async () => {
      const t = (await file.server.api('GET', `/threads/${threadId}`)).body;
      return t.status === 'held' && t.hold.limitFactor === 2;
    }, 'held again with raised limits');
    await hold.getByText('raised ×2').waitFor();
  });
});
