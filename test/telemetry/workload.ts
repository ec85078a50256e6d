import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import type { BuildAppOptions } from '../../src/service/app.js';
import { BASE_LISTENERS, eventually, OPERATOR, organismYaml, startService, type Service } from '../service/fixture.js';
import { startFakeLlm, type FakeLlm } from './fake-llm.js';

export const TEST_HANDLERS = fileURLToPath(new URL('./handlers.ts', import.meta.url));

/** The organism of the telemetry tests: the service fixture's listeners plus LLM agents on a fake provider. */
export function telemetryYaml(fakeUrl: string, extra = ''): string {
  const base = organismYaml(BASE_LISTENERS, 'telemetry-test');
  return base
    .replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: 5000')
    .replace(
      '          - \'<send to="shouter"><Text><text>Hello, {{name}}!</text></Text></send>\'',
      `          - '<send to="shouter"><Text><text>Hello, {{name}}!</text></Text></send>'
        freeloader:
          - '<send to="shouter"><Text><text>Hi, {{name}}!</text></Text></send>'
    - name: fake
      type: openai
      base_url: ${fakeUrl}
      models: [fake-]
      max_retries: 2
      reply_format: xml # the fake server answers in XML text`,
    )
    .replace('    mock-small: {prompt: 0.5, completion: 1.5}', '    mock-small: {prompt: 0.5, completion: 1.5}\n    fake-big: {prompt: 1, completion: 2}')
    .concat(
      `  - name: rogue
    description: Tries to talk to a listener it may not address
    peers: [shouter]
    payload: Text
    handler: ${TEST_HANDLERS}#sneak
  - name: freeloader
    description: Greets with an unpriced model
    agent: true
    peers: [shouter]
    payload: Greeting
    handler: builtin:llm
    model: mock-free
    max_output_tokens: 200
    prompt: You are part of a test.
  - name: spender
    description: Spends most of the thread budget, then asks spender2
    agent: true
    peers: [spender2]
    payload: Text
    handler: builtin:llm
    model: fake-big
    max_output_tokens: 200
    prompt: You are part of a test.
  - name: spender2
    description: Finds the budget gone
    agent: true
    payload: Text
    handler: builtin:llm
    model: fake-big
    max_output_tokens: 200
    prompt: You are part of a test.
  - name: doomed
    description: Its model refuses every request
    agent: true
    payload: Text
    handler: builtin:llm
    model: fake-bad
    max_output_tokens: 200
    prompt: You are part of a test.
${extra}`,
    );
}

export const FAKE_MODELS = {
  'fake-big': {
    failFirst: 1,
    content: '<send to="spender2"><Text><text>more please</text></Text></send>',
    usage: { prompt: 4190, completion: 800, cached: 100, reasoning: 20 },
  },
} as const;

export interface Workload {
  readonly service: Service;
  readonly llm: FakeLlm;
  readonly ws: WebSocket;
  close(): Promise<void>;
}

async function inject(s: Service, to: string, payload: unknown): Promise<string> {
  const res = await s.request('POST', '/api/v1/inject', { body: { to, payload } });
  if (res.status !== 202 && res.status !== 200) throw new Error(`inject to ${to}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.threadId as string;
}

/**
 * A scripted workload whose every metric value is known: 2 echo threads, a failing handler,
 * a greeter -> shouter hop with a priced mock call, a peer denial, an unpriced call, a
 * budget spent past 95 % (after one retried 500) then exhausted, an LLM call refused with 400,
 * a paused listener holding one queued message, and one WebSocket client.
 */
export async function runWorkload(app: Partial<BuildAppOptions> = {}): Promise<Workload> {
  const llm = await startFakeLlm(FAKE_MODELS);
  const service = await startService({ yaml: telemetryYaml(llm.url), storage: 'sqlite', app });
  const ws = new WebSocket(`${service.url.replace('http', 'ws')}/ws`, { headers: { authorization: `Bearer ${OPERATOR}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('message', () => resolve());
    ws.once('error', reject);
  });

  await inject(service, 'echo', { Text: { text: 'one' } });
  await inject(service, 'echo', { Text: { text: 'two' } });
  await inject(service, 'broken', { Text: { text: 'boom' } });
  await inject(service, 'greeter', { Greeting: { name: 'Ada' } });
  await inject(service, 'rogue', { Text: { text: 'go' } });
  await inject(service, 'freeloader', { Greeting: { name: 'Bo' } });
  await inject(service, 'spender', { Text: { text: 'spend' } });
  await inject(service, 'doomed', { Text: { text: 'try' } });
  await eventually(() => service.organism.activeThreads === 0 && service.organism.queued === 0, 'the workload to settle');
  const paused = await service.request('POST', '/api/v1/agents/slow/pause');
  if (paused.status !== 200) throw new Error(`pause: ${paused.status}`);
  await inject(service, 'slow', { Text: { text: 'waits' } });
  await eventually(() => service.organism.queued === 1, 'the paused listener to hold its message');

  return {
    service,
    llm,
    ws,
    close: async () => {
      ws.close();
      await service.close();
      await llm.close();
    },
  };
}
