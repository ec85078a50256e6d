import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { killAll, startCli, startServer } from './processes.js';

afterEach(killAll);
afterAll(() => {
  if (huge) rmSync(huge.dir, { recursive: true, force: true }); // 50 MB
});

/** The demo, made ~50 MB by a comment block (valid YAML: before the cap it was parsed whole); written once. */
let huge: { dir: string; config: string; size: number } | undefined;
function hugeDemo(): { dir: string; config: string; size: number } {
  if (huge) return huge;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-size-'));
  const config = path.join(dir, 'organism.yaml');
  const line = `# ${'y'.repeat(98)}\n`;
  writeFileSync(config, readFileSync('examples/demo/organism.yaml', 'utf8') + line.repeat(500_000));
  copyFileSync('examples/demo/tools.ts', path.join(dir, 'tools.ts'));
  huge = { dir, config, size: Buffer.byteLength(readFileSync(config)) };
  return huge;
}

const tooLarge = (file: string, size: number) =>
  `${file}: the config file is ${size.toLocaleString('en-US')} bytes, over the limit of 1,048,576 bytes (1 MiB): an organism.yaml is a few KB, so check that this is the right file (ORGANISM_MAX_CONFIG_BYTES raises the limit)`;

// A small heap: reading and parsing 50 MB of YAML took 1.7 GB, refusing it takes next to nothing.
const SMALL_HEAP = { NODE_OPTIONS: '--max-old-space-size=192' };

describe('config file size', () => {
  it.each([['check'], ['run'], ['serve']])('%s refuses a 50 MB organism.yaml, naming the file, its size and the limit', { timeout: 180_000 }, async (command) => {
    const { dir, config, size } = hugeDemo();
    const args = command === 'serve' ? ['serve', config, '--no-supervisor', '--port', '0', '--data-dir', path.join(dir, 'data')] : [command, config];
    const cli = startCli(args, SMALL_HEAP);
    const code = await cli.exited;
    expect(code, cli.output()).toBe(ExitCode.CONFIG_INVALID);
    expect(cli.output()).toContain(tooLarge(config, size));
  });

  it('ORGANISM_MAX_CONFIG_BYTES raises the limit, and must be decimal bytes', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-size-'));
    const config = path.join(dir, 'organism.yaml');
    writeFileSync(config, `${readFileSync('examples/demo/organism.yaml', 'utf8')}# ${'z'.repeat(2_000)}\n`);
    copyFileSync('examples/demo/tools.ts', path.join(dir, 'tools.ts'));
    const low = startCli(['check', config], { ORGANISM_MAX_CONFIG_BYTES: '1000' });
    expect(await low.exited, low.output()).toBe(ExitCode.CONFIG_INVALID);
    expect(low.output()).toMatch(/bytes, over the limit of 1,000 bytes: /);
    const bad = startCli(['check', config], { ORGANISM_MAX_CONFIG_BYTES: '1e6' });
    expect(await bad.exited, bad.output()).toBe(ExitCode.CONFIG_INVALID);
    expect(bad.output()).toContain('ORGANISM_MAX_CONFIG_BYTES must be a number of bytes in decimal digits (e.g. 2097152), not "1e6"');
    const ok = startCli(['check', config], { ORGANISM_MAX_CONFIG_BYTES: '1000000' });
    expect(await ok.exited, ok.output()).toBe(ExitCode.OK);
  });

  it('a reload of a config grown over the limit is a 500 RELOAD_INVALID naming the file and its size; the server goes on', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-size-'));
    const config = path.join(dir, 'organism.yaml');
    copyFileSync('examples/demo/organism.yaml', config);
    copyFileSync('examples/demo/tools.ts', path.join(dir, 'tools.ts'));
    const server = await startServer(config, ['--data-dir', path.join(dir, 'data')]);
    const { config: hugeConfig, size } = hugeDemo();
    copyFileSync(hugeConfig, config);
    const res = await server.api('/organism/reload', { method: 'POST' });
    const body = (await res.json()) as { detail: string; code: string };
    expect(res.status, JSON.stringify(body)).toBe(500);
    expect(body.code).toBe('RELOAD_INVALID');
    expect(body.detail).toContain(tooLarge(config, size));
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
  });
});

describe('YAML aliases', () => {
  it('a billion-laughs config is refused at its first alias, cheaply', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-alias-'));
    const config = path.join(dir, 'organism.yaml');
    const levels = 'abcdefghij'.split('');
    const lines = levels.map((l, i) =>
      i === 0
        ? `${l}: &${l} ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]`
        : `${l}: &${l} [${Array(10)
            .fill(`*${levels[i - 1]}`)
            .join(',')}]`,
    );
    writeFileSync(config, `${lines.join('\n')}\norganism: {name: lol}\nlisteners: []\n`);
    const cli = startCli(['check', config], SMALL_HEAP);
    expect(await cli.exited, cli.output()).toBe(ExitCode.CONFIG_INVALID);
    expect(cli.output()).toContain(`${config}:2:8: YAML aliases are not supported: \`*a\` here; write the value out (and 89 more aliases in this file)`);
    expect(cli.output()).toMatch(/^1 problem found$/m);
  });
});
