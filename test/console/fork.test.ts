// Time travel in real Chromium against a real `organism serve` (the fixture organism, mock
// provider): the thread page's Fork button, the message and optional configuration file chosen,
// then the comparison of the thread and its fork side by side.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleFile, eventually, OP_TOKEN, VIEW_TOKEN } from './harness.js';

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 100 });

const file = consoleFile();

async function completedThread(): Promise<string> {
  const r = await file.server.api('POST', '/inject', { to: 'researcher', payload: { text: 'tide pools' } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const threadId = r.body.threadId as string;
  await eventually(async () => (await file.server.api('GET', `/threads/${threadId}`)).body.status === 'completed', 'the thread to complete', 60_000);
  return threadId;
}

describe('time travel in the console', () => {
  it('forks from the thread page at a chosen message, then shows both threads side by side: same messages, every LLM call replayed', async () => {
    const source = await completedThread();
    const messages = (await file.server.api('GET', `/threads/${source}/messages`)).body.messages as Array<{ id: string; to: string }>;
    const p = await file.open(OP_TOKEN, `/threads/${source}`);
    await p.getByRole('button', { name: 'Fork', exact: true }).click();
    const form = p.getByRole('form', { name: 'Fork this thread' });
    await form.getByLabel('Fork at message').selectOption({ label: `2. researcher → writer (Findings)` });
    await form.getByRole('button', { name: 'Fork', exact: true }).click();

    await p.waitForURL(/\/compare\//);
    const fork = /\/compare\/([^/?#]+)/.exec(p.url())![1]!;
    const info = (await file.server.api('GET', `/threads/${fork}`)).body;
    expect(info.forkedFrom).toEqual({ threadId: source, messageId: messages[1]!.id });
    await poll(async () => (await p.getByRole('table', { name: 'Totals' }).locator('tbody tr').nth(1).textContent()) ?? '').toMatch(/completed/);
    await poll(async () => p.getByLabel('Divergence').textContent()).toBe('Same messages · same LLM requests');
    const rows = p.getByRole('table', { name: 'Messages side by side' }).locator('tbody tr');
    await poll(() => rows.count()).toBe(messages.length);
    for (let i = 0; i < messages.length; i++) expect(await rows.nth(i).locator('td').nth(3).textContent()).toBe('same');
    // The fork's one LLM call (the writer's) was answered from the record.
    expect(await p.getByRole('table', { name: 'Totals' }).locator('tbody tr').nth(1).textContent()).toMatch(/1 \(1\)/);

    // The fork's page says what it was forked from, and links back to the comparison.
    await p.getByRole('link', { name: 'Other thread' }).click();
    await p.getByText('Forked from').waitFor();
    await p.getByRole('link', { name: 'compare' }).click();
    await p.waitForURL(new RegExp(`/threads/${source}/compare/${fork}`));
  });

  it('forks under another configuration file: the comparison names the agent whose requests changed; a bad file is named in the form; a viewer cannot fork', async () => {
    const source = await completedThread();
    const yaml = readFileSync(file.server.configPath, 'utf8');
    expect(yaml).toContain('prompt: You write short announcements.');
    writeFileSync(path.join(file.server.dir, 'terse.yaml'), yaml.replace('prompt: You write short announcements.', 'prompt: You write very short announcements.'));
    const p = await file.open(OP_TOKEN, `/threads/${source}`);
    await p.getByRole('button', { name: 'Fork', exact: true }).click();
    const form = p.getByRole('form', { name: 'Fork this thread' });
    await form.getByLabel('Configuration file').fill('terse.yaml');
    await form.getByRole('button', { name: 'Fork', exact: true }).click();
    await p.waitForURL(/\/compare\//);
    const fork = /\/compare\/([^/?#]+)/.exec(p.url())![1]!;
    const terse = realpathSync(path.join(file.server.dir, 'terse.yaml'));
    expect((await file.server.api('GET', `/threads/${fork}`)).body.forkConfig).toBe(terse);
    await poll(async () => (await p.getByRole('table', { name: 'Totals' }).locator('tbody tr').nth(1).textContent()) ?? '').toMatch(/completed/);
    await poll(async () => p.getByLabel('Divergence').textContent()).toMatch(/LLM requests diverge at writer's call/);
    // The fork's page names the file it runs under.
    await p.getByRole('link', { name: 'Other thread' }).click();
    await p.getByText(terse).waitFor();

    file.allow(/422/);
    const again = await file.open(OP_TOKEN, `/threads/${source}`);
    await again.getByRole('button', { name: 'Fork', exact: true }).click();
    const bad = again.getByRole('form', { name: 'Fork this thread' });
    await bad.getByLabel('Configuration file').fill('missing.yaml');
    await bad.getByRole('button', { name: 'Fork', exact: true }).click();
    await bad.getByText(/missing\.yaml is not an organism\.yaml this fork can run under: no such file/).waitFor();

    const v = await file.open(VIEW_TOKEN, `/threads/${source}`);
    expect(await v.getByRole('button', { name: 'Fork', exact: true }).isDisabled()).toBe(true);
  });
});
