import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpServerConfig } from '../../src/config/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import { McpHub, reconnectDelay } from '../../src/mcp/hub.js';
import { eventually } from '../pump/harness.js';

const CRASHY = fileURLToPath(new URL('./fixtures/crashing-server.ts', import.meta.url));
const config: McpServerConfig = { name: 'crashy', command: [process.execPath, '--import', 'tsx', CRASHY], url: null, tools: null, timeoutSeconds: 60 };

const hubs: McpHub[] = [];
afterEach(async () => {
  while (hubs.length) await hubs.pop()!.close();
});

/** A hub over the crashing server, logging (JSON lines) into `lines`. */
function hubWithLog() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const hub = new McpHub([config], process.cwd(), pino({ level: 'info' }, sink));
  hubs.push(hub);
  const signal = new AbortController().signal;
  return {
    hub,
    lines,
    echo: (text: string) => hub.call('crashy', 'echo', { text }, signal),
    crash: () => hub.call('crashy', 'crash', {}, signal),
    disconnects: () => lines.filter((l) => String(l['msg']).startsWith('MCP server disconnected')),
  };
}

describe('MCP stdio server that crashes', () => {
  it('is connected again at the next call, which succeeds; the disconnect is logged once with the stderr tail; stderr is in the log', async () => {
    const h = hubWithLog();
    expect(await h.echo('before')).toEqual({ text: 'before', isError: false });
    const err = await h.crash().then(
      () => null,
      (e: unknown) => e,
    );
    expect(Errors.MCP_TOOL_FAILED.is(err)).toBe(true);
    expect(await h.echo('after')).toEqual({ text: 'after', isError: false });
    expect(await h.echo('again')).toEqual({ text: 'again', isError: false });
    const logged = await eventually(() => (h.disconnects().length > 0 ? h.disconnects() : null), 10_000, 'the disconnect to be logged');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 40, mcpServer: 'crashy', failures: 1, reconnectInMs: 0 });
    expect((logged[0]!['stderrTail'] as string[]).at(-1)).toMatch(/^crashy \d+: crashing on purpose$/);
    // The server's stderr, line by line, at info: two starts (the first and the reconnection) and the crash.
    const stderr = h.lines.filter((l) => l['stream'] === 'stderr' && l['mcpServer'] === 'crashy').map((l) => String(l['msg']));
    expect(stderr.filter((m) => m.endsWith(': started'))).toHaveLength(2);
    expect(stderr.filter((m) => m.endsWith(': crashing on purpose'))).toHaveLength(1);
    expect(h.lines.filter((l) => l['stream'] === 'stderr').every((l) => l['level'] === 30)).toBe(true);
  }, 120_000);

  it('repeated crashes back off: calls meanwhile fail at once saying when, and one line is logged per disconnect', async () => {
    const h = hubWithLog();
    await h.echo('first');
    await h.crash().catch(() => {});
    expect(await h.echo('reconnected at once')).toMatchObject({ text: 'reconnected at once' });
    await h.crash().catch(() => {});
    // A second crash in a row: no reconnection before its delay.
    const refused = await h.echo('too soon').then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(Errors.MCP_UNAVAILABLE.is(refused)).toBe(true);
    expect(refused!.message).toContain('it failed 2 times in a row; the next reconnection is in 1 s');
    await h.echo('still too soon').catch(() => {});
    const later = await eventually(() => h.echo('later').catch(() => null), 30_000, 'the reconnection after the backoff');
    expect(later).toMatchObject({ text: 'later' });
    await eventually(() => h.disconnects().length === 2, 10_000, 'both disconnects to be logged');
    expect(h.disconnects().map((l) => [l['failures'], l['reconnectInMs']])).toEqual([
      [1, 0],
      [2, 1_000],
    ]);
  }, 120_000);

  it('backs off 0, 1, 2, 4 ... seconds, at most 30', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(reconnectDelay)).toEqual([0, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  });
});
