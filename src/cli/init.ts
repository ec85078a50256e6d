import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrganism } from '../config/index.js';
import { writeTypes } from './types.js';

/** This installation's root (the directory of its package.json), from dist/cli or src/cli alike. */
export const INSTALLATION_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const STARTER_YAML = `# A starter organism: one LLM agent (on the offline mock provider) and one code tool;
# organism.test.ts tests it (npm test).
# Every key is documented in docs/configuration.md of the organism package.
organism:
  name: starter

llm:
  providers:
    - name: mock
      type: mock
      script:
        assistant:
          - '<send to="counter"><Count><text>{{text}}</text></Count></send><reply><Question><text>Counting the words of: {{text}}</text></Question></reply>'
    # A real provider: export OPENAI_API_KEY, then give it a lower priority number than mock.
    # - name: openai
    #   type: openai
    #   api_key_env: OPENAI_API_KEY
    #   models: [gpt-4o-mini]

payloads:
  Question:
    description: A question for the assistant
    fields:
      text: string
  Count:
    description: Text whose words should be counted
    fields:
      text: string

listeners:
  - name: assistant
    description: Answers questions and asks the counter for help
    agent: true
    handler: builtin:llm
    model: mock-1
    prompt: You are a helpful assistant. Ask the counter to count words when useful.
    payload: Question
    peers: [counter]

  - name: counter
    description: Counts the words of a text
    handler: ./handlers.ts#countWords
    payload: Count
    peers: []
`;

const STARTER_HANDLERS = `import { defineHandler } from 'organism';

/**
 * A code tool: counts words and logs the result. It has no peers, so its branch ends here.
 * \`payload\` is typed from organism.yaml (organism-env.d.ts, rewritten by \`organism types\`
 * and \`organism check\`): \`payload.text\` is a string.
 */
export const countWords = defineHandler('counter', (payload, ctx) => {
  const words = payload.text.split(/\\s+/).filter(Boolean).length;
  ctx.log.info('counted', { words });
});
`;

const STARTER_TEST = `import { afterEach, describe, expect, it } from 'vitest';
import { createTestOrganism, runHandler, scripted, send, type TestOrganism } from 'organism/testing';
import { countWords } from './handlers.js';

// The organism runs in this process (no server), on a memory store; its mock provider's script
// plays the model, or a scripted model replaces it. See "Testing" in docs/developing.md.
const config = new URL('./organism.yaml', import.meta.url);

let org: TestOrganism | undefined;
afterEach(async () => {
  await org?.close();
  org = undefined;
});

describe('the starter organism', () => {
  it('the assistant asks the counter to count the words of a question', async () => {
    org = await createTestOrganism({ config });
    const thread = await org.run('assistant', { text: 'how many words are in here' });
    expect(thread.status).toBe('completed');
    expect(thread.messages.map((m) => \`\${m.from} -> \${m.to}\`)).toContain('assistant -> counter');
    expect(thread.logs).toContainEqual(expect.objectContaining({ listener: 'counter', msg: 'counted', words: 6 }));
  });

  it('routes as a scripted model decides', async () => {
    const llm = scripted({ assistant: (request) => send('counter', { text: \`\${request.payload['text']} twice\` }) });
    org = await createTestOrganism({ config, llm });
    const thread = await org.run('assistant', { text: 'one two' });
    expect(thread.logs).toContainEqual(expect.objectContaining({ msg: 'counted', words: 3 }));
  });

  it('countWords logs how many words it was sent', async () => {
    const run = await runHandler(countWords, { text: 'a b c' }, { self: 'counter' });
    expect(run.outgoing).toEqual([]);
    expect(run.ctx.logs).toEqual([expect.objectContaining({ msg: 'counted', words: 3 })]);
  });
});
`;

/**
 * The starter's development tools (\`npm run typecheck\`, \`npm test\`): the versions this
 * installation is built and tested with, read from its own package.json so they never drift.
 * Without them \`tsc\` is not found, and \`npx tsc\` would fetch an unrelated package of that name.
 */
function devTools(): Record<string, string> {
  const own = JSON.parse(readFileSync(path.join(INSTALLATION_ROOT, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string> };
  const tools: Record<string, string> = {};
  for (const name of ['typescript', '@types/node', 'vitest']) {
    const range = own.devDependencies?.[name];
    if (range !== undefined) tools[name] = range;
  }
  return tools;
}

/**
 * The project's package.json. organism is a \`file:\` dependency on the installation that ran
 * init, never a registry range: the name \`organism\` on the npm registry is not ours, and a
 * range would install whatever someone publishes under it. organism itself does not need
 * \`npm install\` here (handlers' \`import ... from 'organism'\` resolves to the running
 * installation); installing gives editors and tsc the types and \`npx organism\` its binary.
 */
function starterPackage(dir: string): string {
  const name =
    path
      .basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'my-organism';
  const pkg = {
    name,
    private: true,
    type: 'module',
    scripts: {
      check: 'organism check organism.yaml',
      serve: 'organism serve organism.yaml',
      typecheck: 'tsc --noEmit',
      test: 'vitest run',
    },
    dependencies: { organism: `file:${INSTALLATION_ROOT}` },
    devDependencies: devTools(),
  };
  return JSON.stringify(pkg, null, 2) + '\n';
}

/** Type checking for handlers (tsc --noEmit); organism runs them without a build step. */
const STARTER_TSCONFIG =
  JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        verbatimModuleSyntax: true,
        allowImportingTsExtensions: true,
      },
      include: ['**/*.ts'],
      exclude: ['node_modules'],
    },
    null,
    2,
  ) + '\n';

/** \`organism init [DIR]\`: writes a runnable starter organism and its types (organism-env.d.ts); never overwrites. */
export async function initCommand(dirArg: string | undefined): Promise<number> {
  const dir = path.resolve(dirArg ?? '.');
  mkdirSync(dir, { recursive: true });
  const files: Array<[string, string]> = [
    ['organism.yaml', STARTER_YAML],
    ['handlers.ts', STARTER_HANDLERS],
    ['organism.test.ts', STARTER_TEST],
  ];
  const clash = files.map(([name]) => path.join(dir, name)).filter((f) => existsSync(f));
  if (clash.length > 0) {
    process.stderr.write(`organism init: not overwriting ${clash.join(', ')}\n`);
    return 1;
  }
  // An existing project keeps its own package.json and tsconfig.json.
  const project: Array<[string, string]> = [
    ['package.json', starterPackage(dir)],
    ['tsconfig.json', STARTER_TSCONFIG],
  ];
  const kept = project.filter(([name]) => existsSync(path.join(dir, name))).map(([name]) => name);
  const written = [...files, ...project.filter(([name]) => !kept.includes(name))];
  for (const [name, text] of written) writeFileSync(path.join(dir, name), text);
  const config = path.join(dir, 'organism.yaml');
  // The starter's own types, so its handler type-checks before anything else runs.
  const { file: typesFile } = writeTypes(await loadOrganism(config));
  written.push([path.basename(typesFile), '']);
  process.stdout.write(
    `Wrote ${written.map(([name]) => name).join(', ')} in ${dir}.\n` +
      (kept.includes('package.json')
        ? `Kept your package.json: add "organism": "file:${INSTALLATION_ROOT}" to its dependencies for editor types, ${Object.entries(devTools())
            .map(([name, range]) => `"${name}": "${range}"`)
            .join(', ')} to its devDependencies for tsc and the tests, and the scripts "typecheck": "tsc --noEmit" and "test": "vitest run".\n`
        : '') +
      `Next: organism check ${config} && organism serve ${config}\n` +
      `(npm install in ${dir} links this organism installation and installs typescript and vitest: editor types, npm run typecheck and npm test, whose organism.test.ts runs the organism in-process; it is not needed to run.)\n`,
  );
  return 0;
}
