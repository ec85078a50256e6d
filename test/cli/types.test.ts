import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from './own-project.js';

/**
 * Typed handlers in a project outside the clone, as a developer writes one: organism.yaml,
 * handlers with defineHandler, a tsconfig.json; `organism` and `typescript` installed (linked
 * to this build and this repository's TypeScript). `organism types` writes organism-env.d.ts;
 * the project's own `tsc` then passes the good handlers and fails a misspelt peer and a wrong
 * field type, and so does `organism check`.
 */
const ROOT = path.resolve('.');
const BIN = path.join(ROOT, 'bin/organism.js');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const dirs: string[] = [];

beforeAll(() => {
  // The project compiles against the build, as an installed organism: it must be current.
  const dts = path.join(ROOT, 'dist/index.d.ts');
  if (!existsSync(dts) || statSync(dts).mtimeMs < statSync(path.join(ROOT, 'src/core/typed-handler.ts')).mtimeMs) {
    throw new Error('dist/ is missing or older than src/core/typed-handler.ts: run `npm run build` in this worktree first');
  }
});
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const CONFIG = `organism:
  name: desk
llm:
  providers:
    - name: mock
      type: mock
payloads:
  Ticket:
    description: A support ticket
    fields:
      ticket_id: integer
      text: string
      tags: string[]?
  Approval:
    fields:
      ticket_id: integer
      approved: boolean
  Case:
    fields:
      ticket_id: integer
      notes: list<string>
listeners:
  - name: intake
    description: Takes tickets and approvals in
    handler: ./handlers.ts#intake
    payload: [Ticket, Approval]
    peers: [billing, tech-support]
  - name: billing
    description: Opens billing cases
    handler: ./handlers.ts#billing
    payload: Case
  - name: tech-support
    description: Answers technical tickets
    handler: ./handlers.ts#tech
    payload: Ticket
    peers: [intake]
`;

const TSCONFIG = JSON.stringify({
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
});

/** The handlers, with `intakeBody` as the Ticket branch of intake (what the bad variants change). */
const handlers = (ticketBranch: string) => `import { defineHandler, send } from 'organism';

export const intake = defineHandler('intake', (payload, ctx) => {
  if (ctx.payloadType === 'Approval') {
    return ctx.send('billing', { ticket_id: ctx.payload.ticket_id, notes: [String(ctx.payload.approved)] });
  }
  ${ticketBranch}
});

export const billing = defineHandler('billing', (payload, ctx) => {
  ctx.log.info('case', { notes: payload.notes.length });
});

/** One function per payload type; replies to intake with a type intake accepts. */
export const tech = defineHandler('tech-support', {
  Ticket: (ticket, ctx) => (ticket.tags?.includes('urgent') ? send('intake', { ticket_id: ticket.ticket_id, approved: false }) : ctx.reply({ ticket_id: ticket.ticket_id, approved: true })),
});
`;
const GOOD = "return [ctx.send('tech-support', { ticket_id: ctx.payload.ticket_id, text: ctx.payload.text })];";
const MISSPELT_PEER = "return ctx.send('tech-suport', { ticket_id: ctx.payload.ticket_id, text: ctx.payload.text });";
const MISSPELT_FIELD = "return ctx.send('tech-support', { tikcet_id: ctx.payload.ticket_id, text: ctx.payload.text });";
const WRONG_FIELD = "return ctx.send('tech-support', { ticket_id: ctx.payload.ticket_id, text: 42 });";

function project(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-types-'));
  dirs.push(dir);
  expect(dir.startsWith(ROOT)).toBe(false);
  writeFileSync(path.join(dir, 'organism.yaml'), CONFIG);
  writeFileSync(path.join(dir, 'package.json'), '{"name": "desk", "private": true, "type": "module"}\n');
  writeFileSync(path.join(dir, 'tsconfig.json'), TSCONFIG);
  writeFileSync(path.join(dir, 'handlers.ts'), handlers(GOOD));
  return dir;
}

/** `npm install` of organism (this build) and typescript, as links. */
function install(dir: string): void {
  mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  symlinkSync(ROOT, path.join(dir, 'node_modules/organism'), 'dir');
  // What `npm install` gives the starter: its devDependencies (vitest for its organism.test.ts).
  for (const dep of ['typescript', 'vitest', '@vitest']) symlinkSync(path.join(ROOT, 'node_modules', dep), path.join(dir, 'node_modules', dep), 'dir');
}

/** 1-based line and column of `marker` in handlers.ts with the given Ticket branch. */
function at(ticketBranch: string, marker: string): { line: number; column: number } {
  const lines = handlers(ticketBranch).split('\n');
  const line = lines.findIndex((l) => l.includes(marker));
  return { line: line + 1, column: (lines[line] as string).indexOf(marker) + 1 };
}

const organism = (dir: string, ...args: string[]) => run(process.execPath, [BIN, ...args], dir);
const tsc = (dir: string) => run(process.execPath, [TSC, '-p', dir, '--pretty', 'false'], dir);

describe('types from organism.yaml in a project outside the clone', () => {
  it('organism types writes organism-env.d.ts; tsc passes the good handlers and fails a misspelt peer, a misspelt field and a wrong field type; check fails the peer and the type', () => {
    const dir = project();
    install(dir);
    const types = organism(dir, 'types');
    expect(types.status, types.stderr).toBe(0);
    expect(types.stdout).toBe('organism-env.d.ts: written (3 listeners, 3 payload types)\n');
    const declarations = readFileSync(path.join(dir, 'organism-env.d.ts'), 'utf8');
    expect(declarations).toContain('/** A support ticket */\nexport interface Ticket {\n  ticket_id: number;\n  text: string;\n  tags?: string[];\n}');
    expect(declarations).toContain("declare module 'organism' {");
    expect(organism(dir, 'types').stdout).toBe('organism-env.d.ts: up to date (3 listeners, 3 payload types)\n');

    const good = tsc(dir);
    expect(good.stdout + good.stderr).toBe('');
    expect(good.status).toBe(0);
    const checked = organism(dir, 'check', 'organism.yaml');
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toBe(`types: ${path.join(dir, 'organism-env.d.ts')} up to date; 1 handler module type-check\n${path.join(dir, 'organism.yaml')}: OK\n`);
    expect(checked.status).toBe(0);

    const peer = at(MISSPELT_PEER, "'tech-suport'");
    writeFileSync(path.join(dir, 'handlers.ts'), handlers(MISSPELT_PEER));
    const badPeer = tsc(dir);
    expect(badPeer.status).toBe(2);
    expect(badPeer.stdout).toBe(
      `handlers.ts(${peer.line},${peer.column}): error TS2345: Argument of type '"tech-suport"' is not assignable to parameter of type '"billing" | "tech-support"'.\n`,
    );
    const checkPeer = organism(dir, 'check', 'organism.yaml');
    expect(checkPeer.status).toBe(3);
    expect(checkPeer.stderr).toBe(
      `handlers.ts:${peer.line}:${peer.column}: TS2345: Argument of type '"tech-suport"' is not assignable to parameter of type '"billing" | "tech-support"'.\n1 type error in the handler modules\n`,
    );

    const misspelt = at(MISSPELT_FIELD, 'tikcet_id');
    writeFileSync(path.join(dir, 'handlers.ts'), handlers(MISSPELT_FIELD));
    const badName = tsc(dir);
    expect(badName.status).toBe(2);
    expect(badName.stdout).toBe(
      `handlers.ts(${misspelt.line},${misspelt.column}): error TS2561: Object literal may only specify known properties, but 'tikcet_id' does not exist in type 'Ticket'. Did you mean to write 'ticket_id'?\n`,
    );

    const field = at(WRONG_FIELD, 'text: 42');
    writeFileSync(path.join(dir, 'handlers.ts'), handlers(WRONG_FIELD));
    const badField = tsc(dir);
    expect(badField.status).toBe(2);
    expect(badField.stdout).toBe(`handlers.ts(${field.line},${field.column}): error TS2322: Type 'number' is not assignable to type 'string'.\n`);
    const checkField = organism(dir, 'check', 'organism.yaml');
    expect(checkField.status).toBe(3);
    expect(checkField.stderr).toBe(`handlers.ts:${field.line}:${field.column}: TS2322: Type 'number' is not assignable to type 'string'.\n1 type error in the handler modules\n`);
    // --no-types: the configuration alone.
    expect(organism(dir, 'check', 'organism.yaml', '--no-types').status).toBe(0);
  }, 300_000);

  it('check rewrites the declarations when organism.yaml changes; without typescript installed it says the handlers were not type-checked and passes', () => {
    const dir = project();
    // Nothing installed: check still loads (organism resolves to the running installation).
    const first = organism(dir, 'check', 'organism.yaml');
    expect(first.stderr).toBe('');
    expect(first.stdout).toContain(`types: ${path.join(dir, 'organism-env.d.ts')} written; handler modules not type-checked: typescript is not installed in`);
    expect(first.stdout).toContain('(npm install --save-dev typescript)');
    expect(first.status).toBe(0);
    writeFileSync(path.join(dir, 'organism.yaml'), CONFIG.replace('      tags: string[]?\n', '      tags: string[]?\n      priority: integer\n'));
    const second = organism(dir, 'check', 'organism.yaml');
    expect(second.status).toBe(0);
    expect(second.stdout).toContain('organism-env.d.ts written;');
    expect(readFileSync(path.join(dir, 'organism-env.d.ts'), 'utf8')).toContain('  tags?: string[];\n  priority: number;\n}');
  }, 60_000);

  it('JavaScript handler modules are not compiled unless the tsconfig checks JavaScript (tsc would refuse them)', () => {
    const dir = project();
    install(dir);
    writeFileSync(path.join(dir, 'handlers.js'), 'export const intake = () => undefined;\nexport const billing = () => undefined;\nexport const tech = () => undefined;\n');
    writeFileSync(path.join(dir, 'organism.yaml'), CONFIG.replaceAll('./handlers.ts#', './handlers.js#'));
    const checked = organism(dir, 'check', 'organism.yaml');
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toContain('organism-env.d.ts written; 0 handler modules type-check');
    expect(checked.status).toBe(0);
  }, 60_000);

  it('a defineHandler handler named by another listener is a problem of that listener', () => {
    const dir = project();
    writeFileSync(path.join(dir, 'organism.yaml'), CONFIG.replace('handler: ./handlers.ts#billing', 'handler: ./handlers.ts#tech'));
    const checked = organism(dir, 'check', 'organism.yaml');
    expect(checked.status).toBe(3);
    expect(checked.stderr).toContain(
      "listeners[1].handler: export `tech` of `./handlers.ts` is declared for listener `tech-support` (defineHandler('tech-support', ...)), so it is typed for that listener's payload and peers, not this one's; write defineHandler('billing', ...) or name the right export",
    );
  }, 60_000);

  it('organism init writes the declarations, and its starter type-checks once installed', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-types-init-'));
    dirs.push(dir);
    const init = organism(dir, 'init', '.');
    expect(init.status, init.stderr).toBe(0);
    expect(init.stdout).toContain('organism-env.d.ts');
    expect(readFileSync(path.join(dir, 'organism-env.d.ts'), 'utf8')).toContain('    payload: "Count";');
    expect(readFileSync(path.join(dir, 'handlers.ts'), 'utf8')).toContain("defineHandler('counter'");
    install(dir);
    const checked = tsc(dir);
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  }, 60_000);
});
