import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { failedThreads } from '../../src/cli/run.js';
import type { ThreadRecord } from '../../src/core/thread.js';
import { jobYaml, killAll, organismDir, startCli } from './processes.js';

afterEach(killAll);

/** A fresh organism directory's config file. */
function project(yaml: string, files: Record<string, string> = {}): string {
  return path.join(organismDir(yaml, files), 'organism.yaml');
}

/** An agent calling an OpenAI provider (never reached: nothing here sends it work) whose key is unset. */
const KEYED = `organism: {name: keyed}
llm:
  providers:
    - name: openai
      type: openai
      base_url: http://127.0.0.1:9/v1
      api_key_env: CHECK_RUN_OPENAI_KEY
      models: [gpt-4o]
payloads:
  Question: {fields: {text: string}}
listeners:
  - name: assistant
    handler: builtin:llm
    prompt: p
    model: gpt-4o
    payload: Question
    timeout_seconds: 30
auth:
  tokens:
    - {name: ops, role: operator, token_env: CHECK_RUN_OPS_TOKEN}
`;
const UNSET = { CHECK_RUN_OPENAI_KEY: undefined, CHECK_RUN_OPS_TOKEN: undefined };

describe('organism check: warnings', () => {
  it('warns of a listener timeout that defeats failover and of every unset api_key_env / token_env, with file and line, and exits 0', async () => {
    const config = project(KEYED);
    const check = startCli(['check', config], UNSET);
    expect(await check.exited).toBe(ExitCode.OK);
    const out = check.output();
    expect(out).toContain(`${config}: OK (3 warnings)`);
    expect(out).toContain(
      `warning: ${config}:7:20: llm.providers[0].api_key_env: environment variable \`CHECK_RUN_OPENAI_KEY\` is not set (the API key of provider \`openai\`, used by \`assistant\`)`,
    );
    expect(out).toContain(
      `warning: ${config}:17:22: listeners[0].timeout_seconds: listener \`assistant\` times out after 30 s, before its providers are done: \`openai\` (llm.providers[0], line 4) may take 60 s x 4 attempts`,
    );
    expect(out).toContain('set `timeout_seconds` to at least 248');
    expect(out).toContain(`warning: ${config}:20:46: auth.tokens[0].token_env: environment variable \`CHECK_RUN_OPS_TOKEN\` is not set (the operator token \`ops\`)`);

    const set = startCli(['check', config], { CHECK_RUN_OPENAI_KEY: 'k', CHECK_RUN_OPS_TOKEN: 't' });
    expect(await set.exited).toBe(ExitCode.OK);
    expect(set.output()).not.toContain('CHECK_RUN_OPENAI_KEY');
  }, 120_000);

  it('the starter of organism init checks clean: its default timeouts are coherent', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-check-init-'));
    const init = startCli(['init', dir]);
    expect(await init.exited).toBe(ExitCode.OK);
    const check = startCli(['check', path.join(dir, 'organism.yaml')]);
    expect(await check.exited).toBe(ExitCode.OK);
    expect(check.output()).not.toContain('warning');
  }, 120_000);
});

describe('organism check --probe: starts each MCP server and lists its tools', () => {
  const SERVER = path.resolve('test/mcp/fixtures/mcp-server.ts');
  // tsx by its URL: the server runs in the project's directory, where the bare name would not resolve.
  const TSX = import.meta.resolve('tsx');
  const probed = (servers: string) => `organism: {name: probed}
payloads:
  Question: {fields: {text: string}}
mcp_servers:
${servers}
listeners:
  - name: noop
    handler: ./noop.ts#noop
    payload: Question
`;
  const files = {
    'noop.ts': 'export const noop = () => {};\n',
    // Says why on stderr and exits before speaking MCP, as a server missing its settings does.
    'broken-server.js': "process.stderr.write('broken-server: starting\\nbroken-server: FACTS_TOKEN is not set\\n', () => process.exit(1));\n",
  };
  const facts = `  - name: facts\n    command: [${JSON.stringify(process.execPath)}, --import, ${JSON.stringify(TSX)}, ${JSON.stringify(SERVER)}, ./marker]\n`;

  it('a server that connects: its tools are listed, exit 0', async () => {
    const config = project(probed(facts), files);
    const probe = startCli(['check', '--probe', config]);
    expect(await probe.exited, probe.output()).toBe(ExitCode.OK);
    expect(probe.output()).toContain('mcp_servers[0] `facts`: connected, 3 tools: lookup, fail, slow');
    expect(probe.output()).toContain(`${config}: OK`);
  }, 120_000);

  it('a command with a typo and a server that exits: each reported with what it ran and its stderr, exit non-zero; check alone stays offline and passes', async () => {
    const config = project(probed(`${facts}  - name: typo\n    command: [nodde, ./broken-server.js]\n  - name: broken\n    command: [node, ./broken-server.js]\n`), files);
    const offline = startCli(['check', config]);
    expect(await offline.exited, offline.output()).toBe(ExitCode.OK);
    expect(offline.output()).not.toContain('mcp_servers');

    const probe = startCli(['check', '--probe', config]);
    expect(await probe.exited, probe.output()).toBe(ExitCode.CONFIG_INVALID);
    const out = probe.output();
    expect(out).toContain('mcp_servers[0] `facts`: connected, 3 tools');
    expect(out).toContain(
      `${config}: mcp_servers[1] \`typo\`: could not connect: MCP server typo is unavailable: spawn nodde ENOENT\n  command: nodde ./broken-server.js\n  it wrote nothing to stderr\n  \`nodde\` was not found`,
    );
    expect(out).toContain(
      `${config}: mcp_servers[2] \`broken\`: could not connect: MCP server broken is unavailable: MCP error -32000: Connection closed\n  command: node ./broken-server.js\n  its stderr (last 2 lines):\n    broken-server: starting\n    broken-server: FACTS_TOKEN is not set\n`,
    );
    expect(out).toContain('2 MCP servers could not be reached');
    expect(out).not.toContain(': OK');
  }, 120_000);
});

describe('serve and run refuse an unset provider key an agent needs', () => {
  it('serve exits with the configuration code, naming the variable and the provider, and never listens', async () => {
    const config = project(KEYED.replace(/auth:[\s\S]*$/, ''));
    const serve = startCli(['serve', config, '--no-supervisor', '--port', '0', '--data-dir', mkdtempSync(path.join(os.tmpdir(), 'organism-keyed-'))], UNSET);
    expect(await serve.exited).toBe(ExitCode.CONFIG_INVALID);
    expect(serve.output()).toContain(
      `${config}:7:20: llm.providers[0].api_key_env: environment variable \`CHECK_RUN_OPENAI_KEY\` is not set: it holds the API key of provider \`openai\`, which \`assistant\` calls`,
    );
    expect(serve.output()).not.toContain('API:');
  }, 120_000);

  it('run exits with the configuration code too; with the key set it starts', async () => {
    const config = project(KEYED.replace(/auth:[\s\S]*$/, ''));
    const run = startCli(['run', config, '--once'], UNSET);
    expect(await run.exited).toBe(ExitCode.CONFIG_INVALID);
    expect(run.output()).toContain('environment variable `CHECK_RUN_OPENAI_KEY` is not set');
    const ok = startCli(['run', config, '--once'], { CHECK_RUN_OPENAI_KEY: 'k' });
    expect(await ok.exited).toBe(ExitCode.OK);
  }, 120_000);
});

describe('organism run --once: exit code of its threads', () => {
  const JOBS = jobYaml('jobs');
  const WORKER = 'export const work = (payload: Record<string, unknown>) => { if (payload["n"] === 2) throw new Error("disk on fire"); };\n';

  it('exits THREAD_FAILED when a thread ended in error, naming the thread and its error on stderr; 0 when every thread completed', async () => {
    const config = project(JOBS, { 'worker.ts': WORKER });
    const failing = startCli(['run', config, '--once', '-i', 'worker={"n":1}', '-i', 'worker={"n":2}']);
    expect(await failing.exited).toBe(ExitCode.THREAD_FAILED);
    expect(failing.output()).toMatch(/organism run: thread [0-9a-f-]{36} ended in error: Handler worker failed: disk on fire\n/);
    expect(failing.output().match(/organism run: thread/g)).toHaveLength(1);

    const fine = startCli(['run', config, '--once', '-i', 'worker={"n":1}']);
    expect(await fine.exited).toBe(ExitCode.OK);
    expect(fine.output()).not.toContain('organism run: thread');
  }, 120_000);

  it('a killed thread counts as failed too', () => {
    const thread = (status: ThreadRecord['status'], error: string | null): ThreadRecord => ({
      id: `t-${status}`,
      status,
      participants: [],
      messageCount: 1,
      createdAt: 0,
      lastActivity: 0,
      error,
      metadata: {},
    });
    expect(failedThreads([thread('completed', null), thread('killed', null), thread('error', 'boom'), null])).toEqual(['thread t-killed was killed', 'thread t-error ended in error: boom']);
  });
});
