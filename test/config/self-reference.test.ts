import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModules } from '../../src/config/handlers.js';

/** Handler modules in a directory outside the clone, where nothing named organism is installed. */
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function projectDir(packageJson: object | null): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-own-'));
  dirs.push(dir);
  if (packageJson) writeFileSync(path.join(dir, 'package.json'), JSON.stringify(packageJson));
  writeFileSync(
    path.join(dir, 'handlers.ts'),
    `import { send, reply, definePayload, type Handler } from 'organism';
import { createClient } from 'organism/client';
export const relay: Handler = (payload) => send('sink', { text: String(payload['text']).toUpperCase() });
export const answer: Handler = () => reply({ ok: 'yes' });
export const kinds = [typeof definePayload, typeof createClient];
`,
  );
  return dir;
}

describe("handlers import 'organism' (values and types) without it being installed", () => {
  it.each([
    ['an ES module package ("type": "module")', { type: 'module' }],
    // A package.json without "type" (not none: a parent directory's could decide otherwise).
    ['a CommonJS package (tsx loads .ts as CommonJS)', {}],
  ])('in %s', async (_what, pkg) => {
    const dir = projectDir(pkg);
    const mod = (await loadModules(dir, ['./handlers.ts'])).get('./handlers.ts')!;
    expect(mod.ok ? 'loaded' : mod.error).toBe('loaded');
    if (!mod.ok) return;
    const relay = mod.exports['relay'] as (p: Record<string, unknown>) => unknown;
    expect(relay({ text: 'hi' })).toEqual({ to: 'sink', payload: { text: 'HI' } });
    expect(mod.exports['kinds']).toEqual(['function', 'function']);
  });
});
