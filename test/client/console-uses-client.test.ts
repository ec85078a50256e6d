import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** Every source file of the console (console/src). */
function consoleSources(dir = path.resolve('console/src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? consoleSources(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []));
}

describe('the console talks to the service through organism/client only', () => {
  it('no console file calls fetch or opens a WebSocket itself; its api and live modules import organism/client', () => {
    const own = consoleSources().flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [/\bfetch\(/, /new WebSocket\(/, /['"`]\/api\/v1/, /['"`]\/ws(\/messages)?['"`?]/].filter((re) => re.test(text)).map((re) => `${path.relative(process.cwd(), file)}: ${re}`);
    });
    expect(own).toEqual([]);
    for (const file of ['console/src/api.ts', 'console/src/live.ts', 'console/src/views/Messages.tsx']) {
      expect(readFileSync(file, 'utf8')).toMatch(/from 'organism\/client'/);
    }
  });

  it('the console declares no wire type of its own: api.ts and live.ts take them from organism/client', () => {
    // JsonSchema narrows the open `jsonSchema` object of a capability for the inject form.
    const declared = ['console/src/api.ts', 'console/src/live.ts'].flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/^export interface (\w+)/gm)].map((m) => m[1]));
    expect(declared.sort()).toEqual(['EdgeStats', 'JsonSchema', 'LiveState']);
  });
});
