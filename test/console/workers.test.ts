// The console on a cluster: a real `organism serve --handlers off` on a fresh PostgreSQL database
// with two real `organism worker` processes (test/scaleout/cluster.ts), Debian's Chromium.
// The Workers view lists every process; the Agents view, the topology and the overview count
// the work the workers did (the serve process runs no handler); a worker killed -9 shows as
// lost on the overview, with the deliveries taken back from it, once its lease has expired.
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess, TOKEN, until } from '../cli/processes.js';
import { startCluster, type Cluster } from '../scaleout/cluster.js';
import { withPostgres } from '../store/contract/backends.js';
import { launchBrowser, signIn, watchErrors } from './harness.js';

const LEASE_SECONDS = 3;
const JOBS = 12;
/** Set to write docs/console/workers-light.png and overview-workers-light.png (npm run console:screenshots does not start a cluster). */
const SCREENSHOTS = process.env['ORGANISM_SCREENSHOTS'] === '1';

/** The text of one cell of the row whose first cell links `name`, by column header. */
async function cell(page: Page, table: string, name: string, column: string): Promise<string> {
  const headers = await page.locator(`${table} thead th`).allTextContents();
  const i = headers.indexOf(column);
  if (i < 0) throw new Error(`no column ${column} in ${headers.join(', ')}`);
  const row = page.locator(`${table} tbody tr`).filter({ has: page.getByRole('link', { name, exact: true }) });
  return (await row.locator('td').nth(i).textContent()) ?? '';
}

describe.runIf(withPostgres('console workers view'))('the console on serve --handlers off + 2 workers (PostgreSQL)', () => {
  let c: Cluster;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  beforeAll(async () => {
    c = await startCluster({ workers: 2, concurrency: 2, leaseSeconds: LEASE_SECONDS });
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await c?.close();
  });

  it('lists the serve process and both workers, counts their work in agents, topology and overview, and shows a worker killed -9 as lost with what was taken back from it', async () => {
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    const base = c.serve.base;
    await signIn(page, base, TOKEN, '/workers');

    // Every process: the serve (handlers off) and both workers, alive.
    const row = (name: string) => page.locator(`tr[data-worker="${name}"]`);
    for (const name of ['w1', 'w2']) {
      await expect.poll(async () => (await row(name).textContent()) ?? '', { timeout: 30_000 }).toMatch(/^w\d+workeralive/);
    }
    const serve = page.locator('tr.worker-alive', { hasText: 'serve (handlers off)' });
    await serve.waitFor();
    expect(await serve.locator('td').nth(4).textContent()).toBe(String(c.serve.child.pid));
    expect(await page.locator('p.workers-summary').textContent()).toMatch(/3 processes sharing the database: 3 alive, 0 lost, 0 stopped/);

    // Work the workers do: intake -> thinker (mock LLM) -> sink, JOBS threads.
    for (let i = 0; i < JOBS; i++) await c.inject('intake', { text: `job-${i}`, ms: 10 });
    await c.drained();
    const ranOn = new Set(c.runs().map((r) => r.pid));
    expect(ranOn.has(c.serve.child.pid!)).toBe(false); // the serve process ran none of it

    // The agents view counts the deliveries the workers finished, with their last activity.
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    for (const agent of ['intake', 'thinker', 'sink']) {
      await expect.poll(() => cell(page, 'table', agent, 'Messages'), { timeout: 30_000 }).toBe(String(JOBS));
      expect(await cell(page, 'table', agent, 'Last activity')).toMatch(/ago$/);
    }
    const agents = (await (await c.api('/agents')).json()) as { agents: Array<{ name: string; messageCount: number; lastActivity: string | null }> };
    expect(agents.agents.find((a) => a.name === 'thinker')).toMatchObject({ messageCount: JOBS, lastActivity: expect.any(String) });

    // The topology's edges count the messages the workers sent, at a rate above zero.
    await page.getByRole('link', { name: 'Topology', exact: true }).click();
    const edge = page.locator('[data-edge="thinker->sink"] text');
    await expect.poll(async () => (await edge.textContent()) ?? '', { timeout: 30_000 }).toMatch(new RegExp(`^${JOBS} msgs · [1-9]\\d*/min$`));

    // The overview counts every message journaled, by the serve (injects) and by the workers.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    const messages = page.locator('section[aria-label="Organism"] dt:text-is("Messages") + dd');
    await expect.poll(async () => (await messages.textContent()) ?? '', { timeout: 30_000 }).toBe(String(3 * JOBS));
    expect(await page.getByRole('region', { name: 'Workers' }).getByRole('link').textContent()).toBe('3 of 3 processes alive');

    // Each worker holds two long deliveries (its --concurrency); then w1 is killed -9.
    const [victim] = c.workers.filter((w) => w.name === 'w1');
    for (let i = 0; i < 4; i++) await c.inject('slow', { ms: 600_000 });
    const holding = (pid: number) => c.runs().filter((r) => r.listener === 'slow' && r.ev === 'start' && r.pid === pid).length;
    await until(() => holding(victim!.pid) === 2 && c.workers.every((w) => holding(w.pid) === 2), 'each worker to run two slow deliveries', 60_000);
    await stopProcess(victim!, 'SIGKILL');
    const killedAt = Date.now();

    // The overview says so once its lease has expired: lost, and its two deliveries taken back.
    const card = page.getByRole('region', { name: 'Workers' });
    await card
      .getByLabel('Lost workers')
      .getByText(/^w1 lost: last heartbeat/)
      .waitFor({ timeout: (LEASE_SECONDS + 20) * 1000 });
    const lostAfterMs = Date.now() - killedAt;
    const events = card.getByLabel('Worker events');
    await events.getByText('worker w1 lost: no heartbeat within its lease').waitFor({ timeout: 30_000 });
    // Both other processes may take back a share each (SKIP LOCKED): what matters is that both are told.
    const takenBack = async () => (await events.locator('li').allTextContents()).reduce((n, line) => n + Number(/(\d+) deliver(?:y|ies) taken back from w1/.exec(line)?.[1] ?? 0), 0);
    await expect.poll(takenBack, { timeout: 30_000 }).toBe(2);
    const takenAfterMs = Date.now() - killedAt;
    expect(await card.getByRole('link').textContent()).toBe('2 of 3 processes alive');
    console.info(`console workers: w1 shown lost on the overview ${lostAfterMs} ms after kill -9 (lease ${LEASE_SECONDS} s), its deliveries taken back by ${takenAfterMs} ms`);
    if (SCREENSHOTS) await page.screenshot({ path: path.resolve('docs/console/overview-workers-light.png') });

    // The workers view shows it lost, holding nothing any more (what it held was taken back).
    await page.getByRole('link', { name: 'Workers', exact: true }).click();
    await expect.poll(async () => (await row('w1').textContent()) ?? '', { timeout: 30_000 }).toMatch(/^w1workerlost/);
    const headers = await page.locator('table thead th').allTextContents();
    // The view may first draw the overview's cached list (lost, still holding 2) and then its refetch.
    await expect.poll(async () => await row('w1').locator('td').nth(headers.indexOf('In flight')).textContent(), { timeout: 20_000 }).toBe('0');
    expect(await page.locator('p.workers-summary').textContent()).toMatch(/3 processes sharing the database: 2 alive, 1 lost, 0 stopped/);
    if (SCREENSHOTS) await page.screenshot({ path: path.resolve('docs/console/workers-light.png') });
    expect(errors.unexpected()).toEqual([]);
  }, 600_000);
});
