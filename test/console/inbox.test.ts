// The inbox (issue 25) in the console, in real Chromium against a real `organism serve`: asks to
// a `builtin:human` listener answered through the form generated from answerSchema, rejected
// with a note, the live count in the navigation, and what a viewer and an approver may do.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { consoleFile, eventually, OP_TOKEN, VIEW_TOKEN, type Server } from './harness.js';

const APPROVER_TOKEN = 'console-approver-token-5d21';
// `serve` inherits the test's environment: the approver token's variable is set before it starts.
process.env['CONSOLE_APPROVER_TOKEN'] = APPROVER_TOKEN;

const YAML = `organism: {name: inbox-console}
auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}
    - {name: alice, role: approver, token_env: CONSOLE_APPROVER_TOKEN}
payloads:
  Question: {fields: {text: string}}
  Decision: {fields: {approved: boolean, comment: string}}
listeners:
  - name: asker
    description: Asks the desk about what it is sent
    handler: ./asker.ts#ask
    payload: [Question, Decision]
    peers: [desk, hotline]
  - name: hotline
    description: Urgent asks (people), answered within the hour
    handler: builtin:human
    payload: Question
    timeout_seconds: 3600
  - name: desk
    description: The refunds desk (people)
    handler: builtin:human
    payload: Question
    peers: [archive]
  - name: archive
    description: Files decisions
    handler: ./asker.ts#file
    payload: Decision
`;

const ASKER = `export function ask(payload, ctx) {
  if (ctx.from === 'api') return { to: payload.text.startsWith('urgent') ? 'hotline' : 'desk', payload: { text: 'refund? ' + payload.text }, payloadType: 'Question' };
  return undefined;
}
export const file = () => undefined;
`;

const file = consoleFile({
  prepare: (dir) => {
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'asker.ts'), ASKER);
  },
});

/** Injects a question to the asker; resolves once its ask is open in the inbox. */
async function ask(server: Server, text: string): Promise<{ threadId: string; id: string }> {
  const injected = await server.api('POST', '/inject', { to: 'asker', payload: { Question: { text } } });
  expect(injected.status).toBe(200);
  const threadId: string = injected.body.threadId;
  const id = await eventually(async () => (await server.api('GET', `/inbox?threadId=${threadId}`)).body.items[0]?.id as string | undefined, `the ask of ${text}`);
  return { threadId, id };
}

const card = (page: Page, id: string) => page.getByRole('article', { name: `Inbox item ${id}` });
const count = (page: Page) => page.getByTestId('inbox-count');

describe('the inbox in the console', { timeout: 120_000 }, () => {
  it('an approver answers through the form generated from answerSchema; the thread completes; a wrong answer shows the 422 in the form', async () => {
    const { threadId, id } = await ask(file.server, 'order 17');
    const page = await file.open(APPROVER_TOKEN, '/inbox');
    await page.getByText('alice (approver)').waitFor();
    const item = card(page, id);
    await item.waitFor();
    // Who asked, what, and a link to its thread.
    expect(await item.textContent()).toContain('refund? order 17');
    expect(await item.getByText(/asker\s*asks\s*desk/).count()).toBe(1);
    await item.getByRole('link', { name: threadId.slice(-8) }).waitFor();
    await item.getByText(/waiting \d+s/).waitFor();

    // To a peer (archive accepts Decision): the approver gets the Decision form from the item's
    // peerSchemas; a Question written as raw JSON is refused with the server's 422, shown in the
    // form, and the item stays open.
    file.allow(/status of 422/);
    await item.getByRole('combobox', { name: 'Send to' }).selectOption('archive');
    await item.getByRole('checkbox', { name: /^approved/ }).waitFor();
    await item.getByRole('checkbox', { name: 'Raw JSON' }).check();
    await item.getByRole('textbox', { name: /^Payload \(JSON/ }).fill('{"Question": {"text": "wrong type"}}');
    await item.getByRole('button', { name: 'Answer', exact: true }).click();
    const alert = item.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Error 422/);
    expect((await file.server.api('GET', `/inbox?threadId=${threadId}`)).body.total).toBe(1);

    // Back to the asker: its two types are offered; the Decision form is generated.
    await item.getByRole('combobox', { name: 'Send to' }).selectOption('');
    await item.getByRole('checkbox', { name: 'Raw JSON' }).uncheck();
    const type = item.getByRole('combobox', { name: 'Payload type' });
    expect(await type.locator('option').allTextContents()).toEqual(['Question', 'Decision']);
    await type.selectOption('Decision');
    await item.getByRole('checkbox', { name: /^approved/ }).check();
    await item.getByRole('textbox', { name: /^comment/ }).fill('receipt seen');
    await item.getByRole('textbox', { name: /^Note/ }).fill('checked by phone');
    await item.getByRole('button', { name: 'Answer', exact: true }).click();
    await item.waitFor({ state: 'detached' });

    await eventually(async () => (await file.server.api('GET', `/threads/${threadId}`)).body.status === 'completed', 'the thread to complete');
    const entry = (await file.server.api('GET', `/journal/${id}`)).body;
    expect(entry).toMatchObject({ deliveryState: 'ACKED', closedBy: 'alice', closedNote: 'checked by phone' });
    const messages = (await file.server.api('GET', `/threads/${threadId}/messages`)).body.messages;
    expect(messages.find((m: { from: string }) => m.from === 'desk')).toMatchObject({ to: 'asker', payloadType: 'Decision', payload: { approved: true, comment: 'receipt seen' } });
  });

  it('an answer to an item already closed shows the 409 in the form', async () => {
    const { id } = await ask(file.server, 'twice');
    const page = await file.open(OP_TOKEN, '/inbox');
    // Keep serving this page the list it first read, so the item stays on screen after another
    // answer closes it (the live refresh would otherwise take it away first).
    let first: string | null = null;
    await page.route(/\/api\/v1\/inbox(\?|$)/, async (route) => {
      if (first === null) {
        const res = await route.fetch();
        first = await res.text();
      }
      await route.fulfill({ status: 200, contentType: 'application/json', body: first });
    });
    await page.reload();
    const item = card(page, id);
    await item.waitFor();
    const other = await file.server.api('POST', `/inbox/${id}/answer`, { payload: { Question: { text: 'first' } } });
    expect(other.status).toBe(200);
    file.allow(/status of 409/);
    await item.getByRole('textbox', { name: /^text/ }).fill('second');
    await item.getByRole('button', { name: 'Answer', exact: true }).click();
    const alert = item.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Error 409/);
    await page.unroute(/\/api\/v1\/inbox(\?|$)/);
  });

  it('the thread page shows the waiting ask inline; an operator rejects it there with a note', async () => {
    const { threadId, id } = await ask(file.server, 'reject me');
    const page = await file.open(OP_TOKEN, `/threads/${threadId}`);
    const waiting = page.getByRole('list', { name: 'Timeline' }).getByRole('region', { name: 'Waiting for a person' });
    await waiting.waitFor();
    await waiting.getByRole('link', { name: 'in the inbox' }).waitFor();
    await page
      .getByRole('heading', { name: /Thread/ })
      .getByText('waiting')
      .waitFor();
    await waiting.getByRole('textbox', { name: 'Reason for rejecting' }).fill('not eligible');
    await waiting.getByRole('button', { name: 'Reject', exact: true }).click();
    await waiting.waitFor({ state: 'detached' });
    const entry = (await file.server.api('GET', `/journal/${id}`)).body;
    expect(entry).toMatchObject({ deliveryState: 'FAILED', failureReason: 'rejected', closedBy: 'ops', closedNote: 'not eligible' });
  });

  it('the count in the navigation follows asks live: up when one opens, down when it is answered', async () => {
    const page = await file.open(OP_TOKEN, '/');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const before = Number((await file.server.api('GET', '/organism')).body.inbox.open);
    await eventually(async () => (await count(page).textContent()) === String(before), `the badge to read ${before}`);
    const { id } = await ask(file.server, 'badge');
    await eventually(async () => (await count(page).textContent()) === String(before + 1), 'the badge to go up');
    expect(await page.getByRole('link', { name: `Inbox (${before + 1} open)` }).count()).toBe(1);
    // The overview's journal counts the ask's AWAITING entry.
    await page.getByRole('region', { name: 'Journal' }).getByText('AWAITING').waitFor();
    expect((await file.server.api('POST', `/inbox/${id}/answer`, { payload: { Question: { text: 'done' } } })).status).toBe(200);
    await eventually(async () => (await count(page).textContent()) === String(before), 'the badge to go down');
  });

  it('a viewer sees the inbox read-only; an approver sees answer and reject and no operator control', async () => {
    const { threadId, id } = await ask(file.server, 'roles');
    const viewer = await file.open(VIEW_TOKEN, '/inbox');
    await viewer.getByText('watcher (viewer)').waitFor();
    const seen = card(viewer, id);
    await seen.waitFor();
    expect(await seen.textContent()).toContain('refund? roles');
    await seen.getByText(/Read-only: your token has the viewer role/).waitFor();
    // An ask with a timeout says when it expires.
    const urgent = await ask(file.server, 'urgent roles');
    const expiring = card(viewer, urgent.id);
    await expiring.getByText(/expires \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (59m|1h)/).waitFor();
    expect(
      await card(viewer, id)
        .getByText(/expires/)
        .count(),
    ).toBe(0);
    expect(await seen.getByRole('button').count()).toBe(0);
    expect(await seen.getByRole('textbox').count()).toBe(0);
    await viewer.close();

    const approver = await file.open(APPROVER_TOKEN, `/threads/${threadId}`);
    await approver.getByText('alice (approver)').waitFor();
    const inline = approver.getByRole('region', { name: 'Waiting for a person' });
    await inline.getByRole('button', { name: 'Answer', exact: true }).waitFor();
    await inline.getByRole('button', { name: 'Reject', exact: true }).waitFor();
    const kill = approver.getByRole('button', { name: 'Kill thread', exact: true });
    expect(await kill.isDisabled()).toBe(true);
    expect(await kill.getAttribute('title')).toContain('approver role');
    for (const at of ['/agents', '/inject', '/config', `/threads/${threadId}`]) {
      await approver.goto(`${file.server.url}${at}`);
      await approver.getByRole('button', { name: 'Sign out' }).waitFor();
      await approver.getByRole('heading').first().waitFor();
      // No enabled button anywhere performs an operator action.
      const enabled = await approver.locator('button:enabled:visible').allInnerTexts();
      for (const text of enabled) expect(text, at).not.toMatch(/Pause|Resume|Kill|Raise|Redeliver|Reload|Inject|Apply/);
    }
  });
});
