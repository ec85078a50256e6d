import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { killAll, startCli, until } from './processes.js';

afterEach(() => killAll());

/** Runs `organism serve` with these options: either it refuses them (exit code) or it listens. */
async function serveWith(options: string[]): Promise<{ code: number | null; output: string }> {
  const cli = startCli(['serve', 'examples/demo/organism.yaml', '--no-supervisor', '--port', '0', ...options], { ORGANISM_DATA_DIR: undefined });
  const listening = until(() => /API: +http/.test(cli.output()), 'the banner').then(() => 'listening' as const);
  const outcome = await Promise.race([cli.exited, listening]);
  if (outcome === 'listening') return { code: null, output: `accepted and listening:\n${cli.output()}` };
  return { code: outcome, output: cli.output() };
}

describe('numeric command-line options', () => {
  it.each([
    ['--drain-timeout', 'abc', /option '--drain-timeout <seconds>' argument 'abc' is invalid\. expected seconds from 0 to 86400 as a decimal number/],
    ['--drain-timeout', '-5', /'--drain-timeout <seconds>' argument '-5' is invalid/],
    ['--drain-timeout', '1e3', /'--drain-timeout <seconds>' argument '1e3' is invalid/],
    ['--drain-timeout', 'Infinity', /'--drain-timeout <seconds>' argument 'Infinity' is invalid/],
    ['--drain-timeout', '', /'--drain-timeout <seconds>' argument '' is invalid/],
    ['--port', '0x10', /option '-p, --port <port>' argument '0x10' is invalid\. expected a port number from 0 to 65535/],
    ['--port', '1e3', /'-p, --port <port>' argument '1e3' is invalid/],
    ['--port', '', /'-p, --port <port>' argument '' is invalid/],
    ['--demo-traffic', 'abc', /option '--demo-traffic \[seconds\]' argument 'abc' is invalid\. expected seconds from 0.05 to 86400/],
    ['--demo-traffic', '0x10', /'--demo-traffic \[seconds\]' argument '0x10' is invalid/],
  ])('serve %s %j is a usage error naming the option and the expected form', { timeout: 120_000 }, async (option, value, message) => {
    const { code, output } = await serveWith([option, value]);
    expect(code, output).toBe(ExitCode.USAGE);
    expect(output).toMatch(message);
    expect(output).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('decimal values in range are accepted', { timeout: 120_000 }, async () => {
    const { code, output } = await serveWith(['--drain-timeout', '0.5', '--demo-traffic', '60']);
    expect(code, output).toBeNull();
  });
});
