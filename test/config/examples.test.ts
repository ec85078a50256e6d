import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkOrganism, loadOrganism, loadOrganismFromString, sanitizedConfigYaml } from '../../src/config/index.js';
import { generateTypeDeclarations, TYPES_FILE } from '../../src/config/type-declarations.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEMO = path.join(ROOT, 'examples', 'demo', 'organism.yaml');
/** Every bundled example: a directory of examples/ with an organism.yaml. */
const EXAMPLES = readdirSync(path.join(ROOT, 'examples'))
  .map((dir) => path.join(ROOT, 'examples', dir, 'organism.yaml'))
  .filter((file) => existsSync(file));

describe('documented examples', () => {
  it('the bundled examples are found: the demo and the support desk', () => {
    expect(EXAMPLES.map((f) => path.basename(path.dirname(f))).sort()).toEqual(['demo', 'support-desk']);
  });

  for (const file of EXAMPLES) {
    const name = path.basename(path.dirname(file));
    it(`the ${name} example is valid`, async () => {
      expect(await checkOrganism(file)).toEqual([]);
    });

    if (existsSync(path.join(path.dirname(file), TYPES_FILE))) {
      it(`the ${name} example's ${TYPES_FILE} is what \`organism types\` writes (npm test type-checks the example with it)`, async () => {
        const loaded = await loadOrganism(file);
        const typesFile = path.join(path.dirname(file), TYPES_FILE);
        expect(readFileSync(typesFile, 'utf8')).toBe(generateTypeDeclarations({ listeners: loaded.config.listeners, payloadTypes: loaded.payloadTypes }));
      });
    }
  }

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

  it('the when: branches example of docs/configuration.md loads in an organism', async () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
    const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((b) => b.includes('when: {category: billing}'));
    expect(block).toBeDefined();
    const yaml = [
      'organism: {name: t}',
      'llm:',
      '  providers:',
      '    - name: mock',
      '      type: mock',
      ...block!.split('\n').map((line) => `      ${line}`),
      'payloads:',
      '  Customer: {fields: {tier: string}}',
      '  Ticket: {fields: {text: string, category: {type: string, optional: true}, priority: {type: integer, optional: true}, customer: {type: Customer, optional: true}}}',
      'listeners:',
      '  - {name: triage, handler: builtin:llm, model: mock-1, prompt: Route., payload: Ticket, peers: [billing, tech]}',
      '  - {name: billing, handler: ./tools.ts#uppercase, payload: Ticket}',
      '  - {name: tech, handler: ./tools.ts#uppercase, payload: Ticket}',
    ].join('\n');
    const loaded = await loadOrganismFromString(yaml, DEMO);
    const script = loaded.config.llm.providers[0]!.script['triage'] as readonly { when?: unknown; steps: unknown[] }[];
    expect(script.map((b) => [b.when ?? null, b.steps.length])).toEqual([
      [{ category: 'billing' }, 1],
      [{ text: '/refund|invoice/i', priority: [1, 2] }, 1],
      [{ 'customer.tier': 'gold' }, 2],
      [null, 1],
    ]);
    // The sanitized view (GET /organism/config as YAML) writes the branches as organism.yaml does.
    const again = await loadOrganismFromString(sanitizedConfigYaml(loaded.config, {}), DEMO);
    expect(again.config.llm.providers[0]!.script).toEqual(loaded.config.llm.providers[0]!.script);
  });
});
