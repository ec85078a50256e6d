import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { problemsOf } from './helpers.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const CONFIG = path.join(dir, 'organism.yaml');

function organism(handler: string): string {
  return `organism: {name: t}
payloads:
  Job: {fields: {n: integer}}
listeners:
  - name: worker
    handler: ${handler}
    payload: Job
`;
}

describe('organism check: a handler with a syntax error shows the compiler message, line and column', () => {
  it.each([
    ['TypeScript', 'syntax-ts.ts', 'export const work = (p: Record<string, unknown>) => {\n  const x = ;\n  return p;\n};\n', 'syntax-ts.ts:2:13: Unexpected ";" in `const x = ;`'],
    ['JavaScript', 'syntax-js.js', 'export function work(p) {\n  return p.(x);\n}\n', 'syntax-js.js:2:12: Expected identifier but found "(" in `return p.(x);`'],
  ])('%s', async (_lang, file, source, where) => {
    writeFileSync(path.join(dir, file), source);
    const problems = await problemsOf(organism(`./${file}#work`), CONFIG);
    expect(problems).toEqual([
      {
        file: CONFIG,
        line: 6,
        column: 14,
        keyPath: 'listeners[0].handler',
        message: `handler module \`./${file}\` failed to load: syntax error at ${where}; fix it and run organism check again`,
      },
    ]);
  });

  it('a syntax error in a file the handler imports names that file', async () => {
    writeFileSync(path.join(dir, 'helper.ts'), 'export const twice = (n: number) => n * * 2;\n');
    writeFileSync(path.join(dir, 'uses-helper.ts'), "import { twice } from './helper.ts';\nexport const work = (p: { n: number }) => twice(p.n);\n");
    const [problem] = await problemsOf(organism('./uses-helper.ts#work'), CONFIG);
    expect(problem?.message).toMatch(/^handler module `\.\/uses-helper\.ts` failed to load: syntax error at helper\.ts:1:\d+: .+ in `export const twice/);
  });
});

describe('organism check: one mis-indented YAML line gives one clear error', () => {
  it('the first error alone, on the mis-indented line, with what to do and the cascade counted', async () => {
    const yaml = [
      'organism: {name: t}',
      'payloads:',
      '  Job: {fields: {n: integer}}',
      'listeners:',
      '  - name: worker',
      '   description: works',
      '    handler: ./worker.ts#work',
      '    payload: Job',
      '    peers: []',
      '',
    ].join('\n');
    const problems = await problemsOf(yaml, CONFIG);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: CONFIG, line: 6, column: 1 });
    expect(problems[0]!.message).toMatch(
      /^YAML syntax error: Sequence item without - indicator; check the indentation of `description: works`: keys of one mapping start in the same column, list items with `- `, indented with spaces \(\d+ more errors after this one, probably caused by it\)$/,
    );
  });
});
