import path from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { BASE_LISTENERS, HANDLERS, organismYaml, startService, type Service } from '../service/fixture.js';
import { exposedYaml } from '../interop/fixture.js';
import { killAll, organismDir, startServer, TOKEN } from './processes.js';

let second: Service | undefined;
afterAll(async () => {
  await second?.close();
  killAll();
});

/**
 * Issue 31 across two processes: the first organism is a real `organism serve` child exposing
 * `helper` over A2A; the second (in this process) has a `handler: a2a:` listener pointing at it.
 * A thread injected into the second completes there with the first's answer, and the first ran
 * it as a thread of its own.
 */
it('a second organism uses a served one through a handler: a2a listener; the thread completes across both', async () => {
  const dir = organismDir(exposedYaml(), { 'handlers.ts': HANDLERS });
  const first = await startServer(path.join(dir, 'organism.yaml'));
  process.env['SERVED_ORGANISM_TOKEN'] = TOKEN;
  second = await startService({
    yaml: organismYaml(
      [
        ...BASE_LISTENERS,
        {
          name: 'asker',
          yaml: `  - name: asker
    payload: Text
    handler: a2a:${first.base}/a2a/helper
    token_env: SERVED_ORGANISM_TOKEN`,
        },
      ],
      'second',
    ),
  });
  const { threadId } = await second.organism.inject('asker', { text: 'two processes' });
  await vi.waitUntil(async () => (await second!.organism.thread(threadId))?.status === 'completed', { timeout: 30_000, interval: 50 });
  const { messages } = await second.client.threads.messages(threadId);
  expect(messages.find((m) => m.to === 'api')).toMatchObject({ from: 'asker', payload: { text: 'The answer to two processes is 42' } });
  const remote = (await (await first.api('/threads?agent=helper')).json()) as { threads: Array<{ status: string }> };
  expect(remote.threads.map((t) => t.status)).toEqual(['completed']);
});
