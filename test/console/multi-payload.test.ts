// A listener of several payload types (`payload: [Ticket, Approval]`) in the console, in real
// Chromium against a real `organism serve`: the inject form offers the payload type, builds its
// fields from the chosen type's schema and injects a message of that type.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleFile, OP_TOKEN } from './harness.js';

const YAML = `organism: {name: multi-payload-console}
auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}
payloads:
  Ticket: {fields: {text: string}}
  Approval: {fields: {ticket: string, approved: boolean}}
listeners:
  - name: desk
    description: takes tickets and approvals
    handler: ./desk.ts#take
    payload: [Ticket, Approval]
`;

const file = consoleFile({
  prepare: (dir) => {
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'desk.ts'), 'export const take = () => undefined;\n');
  },
});

describe('inject form for a listener of several payload types', { timeout: 120_000 }, () => {
  it('the operator chooses the type; the form shows that type’s fields and the message is of that type', async () => {
    const page = await file.open(OP_TOKEN, '/inject');
    const target = page.getByRole('combobox', { name: 'Target' });
    await target.selectOption('desk');
    expect(await target.locator('option:checked').textContent()).toBe('desk (Ticket | Approval)');
    const type = page.getByRole('combobox', { name: 'Payload type' });
    await type.waitFor();
    expect(await type.locator('option').allTextContents()).toEqual(['Ticket', 'Approval']);
    // The first type's fields first.
    await page.getByRole('textbox', { name: /^text/ }).waitFor();
    await type.selectOption('Approval');
    await page.getByRole('textbox', { name: /^ticket/ }).fill('T-7');
    await page.getByRole('checkbox', { name: /^approved/ }).check();
    expect(await page.getByRole('textbox', { name: /^text/ }).count()).toBe(0);
    await page.getByRole('button', { name: 'Inject', exact: true }).click();
    await page.waitForURL(/\/threads\/[0-9a-f-]+$/);
    const threadId = page.url().split('/').pop()!;
    const messages = (await file.server.api('GET', `/threads/${threadId}/messages`)).body.messages;
    expect(messages[0]).toMatchObject({ to: 'desk', payloadType: 'Approval', payload: { ticket: 'T-7', approved: true } });
  });
});
