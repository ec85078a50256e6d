// Schedules and webhooks (issue 31) in the console, in real Chromium against a real
// `organism serve`: a 1-second schedule's ticks listed with links to their threads, and a
// webhook whose receiver answers 500 shown with its failed attempts and last status.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, WebhookReceiver } from '../support/webhook-receiver.js';
import { consoleFile, eventually, VIEW_TOKEN } from './harness.js';

const secret = newWebhookSecret();
// `serve` inherits the test's environment: the secret's variable is set before it starts.
process.env['CONSOLE_WEBHOOK_SECRET'] = secret;
const receiver = new WebhookReceiver(secret);
receiver.status = () => 500;

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.close();
});

const file = consoleFile({
  prepare: (dir) => {
    const config = path.join(dir, 'organism.yaml');
    appendFileSync(
      config,
      `
schedules:
  - name: every-second
    every: 1s
    to: announcer
    payload: {text: tick}
webhooks:
  - name: ops-hook
    url: ${receiver.url}
    events: [thread_completed]
    secret_env: CONSOLE_WEBHOOK_SECRET
    retry: {initial_seconds: 0.2, max_seconds: 1}
`,
    );
  },
});

describe('schedules and webhooks in the console', () => {
  it('lists the schedule with its ticks linking to their threads, and the failing webhook with its last status', async () => {
    await eventually(async () => receiver.refusedTries >= 2 || null, 'the receiver to refuse deliveries');
    const page = await file.open(VIEW_TOKEN, '/schedules');
    const row = page.locator('tr[data-schedule="every-second"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('every 1s');
    const ticks = page.getByRole('list', { name: 'Ticks of every-second' });
    await ticks.getByRole('link').first().waitFor();
    const firstLink = ticks.getByRole('link').first();
    const short = (await firstLink.textContent()) ?? '';
    expect(await ticks.locator('li.tick-fired').count()).toBeGreaterThan(0);

    const hook = page.locator('tr[data-webhook="ops-hook"]');
    await hook.waitFor();
    await page.locator('tr.delivery-pending', { hasText: 'HTTP 500' }).first().waitFor();
    expect(await page.locator('tr.delivery-pending').first().textContent()).toContain('thread_completed');

    await firstLink.click();
    await page.waitForURL(/\/threads\//);
    expect(page.url()).toContain(short);
  });
});
