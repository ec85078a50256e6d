import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { openAiChunks, openAiOk } from '../llm/servers/openai-server.js';
import { startScriptedServer, type ScriptedServer, type SeenRequest } from '../llm/servers/scripted-server.js';
import { eachBackend, type Backend } from '../store/contract/backends.js';
import { killAll, organismDir, startServer, stopProcess, type ServerProcess } from './processes.js';

afterEach(killAll);

/**
 * A fork's replay survives a kill -9 (issue 29): a real `serve` replays a fork from the record,
 * is SIGKILLed in the middle (a code handler between the two LLM agents holds the fork), and is
 * started again on the same store; the fork completes as its source did, and the provider (a
 * local OpenAI-compatible server that counts requests) received no request for it.
 */
const yaml = (url: string) => `organism: {name: fork-restart}
llm:
  providers:
    - {name: fake, type: openai, base_url: ${url}, models: [gpt-test], max_retries: 0}
payloads:
  Question: {fields: {text: string}}
  Findings: {fields: {topic: string, summary: string}}
  Text: {fields: {text: string}}
listeners:
  - name: researcher
    description: Researches
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: You research questions and send what you find on.
    payload: Question
    peers: [relay]
  - name: relay
    description: Passes findings on
    handler: ./handlers.ts#relay
    payload: Findings
    peers: [writer]
    timeout_seconds: 600
  - name: writer
    description: Writes
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: You write announcements.
    payload: Findings
    peers: [announcer]
  - name: announcer
    description: The end
    handler: ./handlers.ts#done
    payload: Text
`;

/** relay: while the HOLD file exists, notes the thread and never returns (the kill comes then). */
const HANDLERS = `import { appendFileSync, existsSync } from 'node:fs';
export async function relay(payload: Record<string, unknown>, ctx: { threadId: string }) {
  if (existsSync(process.env.HOLD_FILE!)) {
    appendFileSync(process.env.REACHED_FILE!, ctx.threadId + '\\n');
    await new Promise(() => {});
  }
  return { to: 'writer', payload, payloadType: 'Findings' };
}
export function done() {
  return undefined;
}
`;

function answer(req: SeenRequest) {
  const messages = req.body['messages'] as Array<{ role: string; content: string }>;
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const text = system.includes('research')
    ? `<send to="relay"><Findings><topic>${/<text>([^<]*)<\/text>/.exec(last)?.[1]}</topic><summary>agreed</summary></Findings></send>`
    : `<send to="announcer"><Text><text>News on ${/<topic>([^<]*)<\/topic>/.exec(last)?.[1]}</text></Text></send>`;
  const completion = openAiOk(text, {}, 'gpt-test');
  return req.body['stream'] ? { events: openAiChunks(completion, true) } : { body: completion };
}

let fake: ScriptedServer;
beforeAll(async () => {
  fake = await startScriptedServer(answer);
});
afterAll(async () => {
  await fake.close();
});

interface Msg {
  from: string;
  to: string;
  payloadType: string;
  payload: unknown;
}

const json = async (s: ServerProcess, p: string, init?: RequestInit) => (await s.api(p, init)).json() as Promise<Record<string, unknown>>;
const completed = (s: ServerProcess, id: string) => s.until(async () => (await json(s, `/threads/${id}`)).status === 'completed', `thread ${id} to complete`);
const messages = async (s: ServerProcess, id: string) =>
  ((await json(s, `/threads/${id}/messages?limit=100`)).messages as Msg[]).map((m) => ({ from: m.from, to: m.to, payloadType: m.payloadType, payload: m.payload }));

/**
 * A real serve runs a source thread to completion, forks it (`forkBody`), is SIGKILLed while the
 * relay holds the fork, and is started again on the same store.
 */
async function forkKilledMidway(backend: Backend, forkBody: Record<string, unknown>, files: Record<string, string> = {}) {
  const dir = organismDir(yaml(fake.url), { 'handlers.ts': HANDLERS, ...files });
  const hold = path.join(dir, 'hold');
  const reached = path.join(dir, 'reached');
  const config = path.join(dir, 'organism.yaml');
  const args = await backend.place().cliArgs();
  const env = { HOLD_FILE: hold, REACHED_FILE: reached };
  const first: ServerProcess = await startServer(config, args, { env });
  const start = fake.seen.length;
  const injected = await json(first, '/inject', { method: 'POST', body: JSON.stringify({ to: 'researcher', payload: { text: 'tides' } }) });
  const source = injected.threadId as string;
  await completed(first, source);
  const before = await messages(first, source);
  expect(before.map((m) => m.to)).toEqual(['researcher', 'relay', 'writer', 'announcer']);
  const requests = fake.seen.length;
  expect(requests - start).toBe(2);

  writeFileSync(hold, '');
  const fork = (await json(first, `/threads/${source}/fork`, { method: 'POST', body: JSON.stringify(forkBody) })) as {
    threadId: string;
    replay: string;
    config: { updated: string[] } | null;
  };
  // The researcher's call was replayed; the relay holds the fork: kill -9 now.
  await first.until(() => existsSync(reached) && readFileSync(reached, 'utf8').includes(fork.threadId), 'the fork to reach the relay');
  await stopProcess(first, 'SIGKILL');
  rmSync(hold);
  const server = await startServer(config, args, { env });
  await completed(server, fork.threadId);
  return { server, fork, before, requests };
}

eachBackend("a fork's replay across a kill -9", (backend) => {
  it('the fork completes after the restart, and the provider receives no request for it', { timeout: 180_000 }, async () => {
    const { server, fork, before, requests } = await forkKilledMidway(backend, {});
    expect(fork.replay).toBe('record');
    expect(await messages(server, fork.threadId)).toEqual(before);
    expect(fake.seen.length).toBe(requests);
    const calls = (await json(server, `/threads/${fork.threadId}/llm-calls`)).calls as Array<{ agent: string; replayed: boolean; cost: number }>;
    expect(calls.every((c) => c.replayed && c.cost === 0)).toBe(true);
    expect(calls.map((c) => c.agent)).toContain('writer');
    await stopProcess(server);
  });

  it('a fork under another organism.yaml runs under it again after a kill -9: the researcher replayed, the changed writer live once', { timeout: 180_000 }, async () => {
    const loud = yaml(fake.url).replace('You write announcements.', 'You write LOUD announcements.');
    const { server, fork, before, requests } = await forkKilledMidway(backend, { configPath: 'loud.yaml' }, { 'loud.yaml': loud });
    expect(fork.config?.updated).toEqual(['writer']);
    // Only the writer's call went to the provider, with the fork's prompt (the running organism's is not LOUD).
    const live = fake.seen.slice(requests);
    expect(live).toHaveLength(1);
    expect(JSON.stringify(live[0]!.body)).toContain('LOUD');
    const calls = (await json(server, `/threads/${fork.threadId}/llm-calls`)).calls as Array<{ agent: string; replayed: boolean }>;
    expect(calls.map((c) => [c.agent, c.replayed])).toEqual([
      ['researcher', true],
      ['writer', false],
    ]);
    expect((await messages(server, fork.threadId)).map((m) => m.to)).toEqual(before.map((m) => m.to));
    await stopProcess(server);
  });
});
