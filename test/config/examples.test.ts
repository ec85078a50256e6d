import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkOrganism, loadOrganismFromString } from '../../src/config/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEMO = path.join(ROOT, 'examples', 'demo', 'organism.yaml');

describe('documented examples', () => {
  it('the demo organism is valid', async () => {
    expect(await checkOrganism(DEMO)).toEqual([]);
  });

  it('every YAML block in docs/configuration.md that declares an organism is valid', async () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
    const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').filter((b) => /^organism:/m.test(b));
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      // Anchored beside the demo's tools.ts, which the example references.
      const loaded = await loadOrganismFromString(block, DEMO);
      expect(loaded.listeners.length).toBeGreaterThan(0);
    }
  });
});
