import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { problemsOf } from './helpers.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-check-'));
// Its own package.json (no "type"): a package.json in a parent directory must not decide how
// tsx loads these modules.
writeFileSync(path.join(dir, 'package.json'), '{}');
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

  it.each([
    ['JavaScript', 'esm-syntax.js', 'export function work(p) {\n  return p.(x);\n}\n', 'esm-syntax.js:2:12: Expected identifier but found "(" in `return p.(x);`'],
    ['TypeScript', 'esm-syntax.ts', 'export const work = (p: Record<string, unknown>) => {\n  const x = ;\n  return p;\n};\n', 'esm-syntax.ts:2:13: Unexpected ";" in `const x = ;`'],
  ])('%s in a "type": "module" project (Node parses the JavaScript itself)', async (_lang, file, source, where) => {
    const esm = mkdtempSync(path.join(os.tmpdir(), 'organism-check-esm-'));
    try {
      writeFileSync(path.join(esm, 'package.json'), '{"type": "module"}');
      writeFileSync(path.join(esm, file), source);
      const problems = await problemsOf(organism(`./${file}#work`), path.join(esm, 'organism.yaml'));
      expect(problems.map((p) => p.message)).toEqual([`handler module \`./${file}\` failed to load: syntax error at ${where}; fix it and run organism check again`]);
    } finally {
      rmSync(esm, { recursive: true, force: true });
    }
  });

  it('a JavaScript syntax error in a file an ES module handler imports names that file', async () => {
    const esm = mkdtempSync(path.join(os.tmpdir(), 'organism-check-esm-'));
    try {
      writeFileSync(path.join(esm, 'package.json'), '{"type": "module"}');
      writeFileSync(path.join(esm, 'helper.js'), 'export const twice = (n) => n * * 2;\n');
      writeFileSync(path.join(esm, 'uses-helper.js'), "import { twice } from './helper.js';\nexport const work = (p) => twice(p.n);\n");
      const [problem] = await problemsOf(organism('./uses-helper.js#work'), path.join(esm, 'organism.yaml'));
      expect(problem?.message).toMatch(/^handler module `\.\/uses-helper\.js` failed to load: syntax error at helper\.js:1:\d+: .+ in `export const twice/);
    } finally {
      rmSync(esm, { recursive: true, force: true });
    }
  });

  it('a syntax error in a file the handler imports names that file', async () => {
    writeFileSync(path.join(dir, 'helper.ts'), 'export const twice = (n: number) => n * * 2;\n');
    writeFileSync(path.join(dir, 'uses-helper.ts'), "import { twice } from './helper.ts';\nexport const work = (p: { n: number }) => twice(p.n);\n");
    const [problem] = await problemsOf(organism('./uses-helper.ts#work'), CONFIG);
    expect(problem?.message).toMatch(/^handler module `\.\/uses-helper\.ts` failed to load: syntax error at helper\.ts:1:\d+: .+ in `export const twice/);
  });
});

describe('organism check: one report per broken module, not one per listener', () => {
  const shared = (module: string, other: string) => `organism: {name: t}
payloads:
  Job: {fields: {n: integer}}
listeners:
${['intake', 'billing', 'tech', 'review'].map((name) => `  - name: ${name}\n    handler: ${module}#${name}\n    payload: Job\n`).join('')}  - name: other
    handler: ${other}
    payload: Job
`;

  it('a syntax error in a module four listeners use: reported once, at the first, naming the four', async () => {
    writeFileSync(path.join(dir, 'shared-syntax.ts'), 'export const intake = (p: unknown) => {\n  const x = ;\n};\n');
    writeFileSync(path.join(dir, 'other-syntax.ts'), 'export const work = ( => 1;\n');
    const problems = await problemsOf(shared('./shared-syntax.ts', './other-syntax.ts#work'), CONFIG);
    expect(problems.map((p) => [p.keyPath, p.message.replace(/: syntax error at .*/, '')])).toEqual([
      ['listeners[0].handler', 'handler module `./shared-syntax.ts` (of listeners `intake`, `billing`, `tech` and `review`) failed to load'],
      // A module of one listener keeps its message as it was.
      ['listeners[4].handler', 'handler module `./other-syntax.ts` failed to load'],
    ]);
    expect(problems[0]!.message).toContain('syntax error at shared-syntax.ts:2:13');
  });

  it('a missing module four listeners name: reported once', async () => {
    const problems = await problemsOf(shared('./no-such-module.ts', 'builtin:llm'), CONFIG);
    const missing = problems.filter((p) => p.message.includes('no-such-module'));
    expect(missing.map((p) => p.keyPath)).toEqual(['listeners[0].handler']);
    expect(missing[0]!.message).toMatch(/^handler module `\.\/no-such-module\.ts` \(of listeners `intake`, `billing`, `tech` and `review`\) not found/);
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

describe('organism check: a handler module that fails to load says what to do', () => {
  it('a package that is not installed: install it beside the config, or fix the import', async () => {
    writeFileSync(path.join(dir, 'needs-package.ts'), "import { thing } from 'no-such-package-here/sub';\nexport const work = () => thing;\n");
    const [problem] = await problemsOf(organism('./needs-package.ts#work'), CONFIG);
    expect(problem?.message).toMatch(/^handler module `\.\/needs-package\.ts` failed to load: Cannot find (module|package) 'no-such-package-here\/sub'/);
    expect(problem?.message).toContain(`; install it beside the config (npm install no-such-package-here in ${dir}) or fix the import`);
  });

  it('a module whose top-level code throws: the message and what to fix', async () => {
    const esm = mkdtempSync(path.join(os.tmpdir(), 'organism-check-esm-'));
    try {
      writeFileSync(path.join(esm, 'package.json'), '{"type": "module"}');
      writeFileSync(path.join(esm, 'throws.ts'), "const settings = JSON.parse('{bad');\nexport const work = () => settings;\n");
      const [problem] = await problemsOf(organism('./throws.ts#work'), path.join(esm, 'organism.yaml'));
      expect(problem?.message).toMatch(/^handler module `\.\/throws\.ts` failed to load: .*JSON.* \(while the module loaded\); fix the module's top-level code$/);
    } finally {
      rmSync(esm, { recursive: true, force: true });
    }
  });
});
