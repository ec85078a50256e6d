// What the waterfall's browser test and screenshots add to the fixture organism: an agent that
// calls a real MCP server, and a listener whose handler waits at a gate the test releases.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/** Holds every request until released: the `holder` listener's handler waits on it. */
export interface Gate {
  readonly url: string;
  readonly waiting: () => number;
  release(): void;
  close(): Promise<void>;
}

export async function startGate(): Promise<Gate> {
  const held: ServerResponse[] = [];
  let open = false;
  const http: HttpServer = createServer((_req: IncomingMessage, res: ServerResponse) => {
    if (open) return void res.end('go');
    held.push(res);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/`,
    waiting: () => held.length,
    release: () => {
      open = true;
      for (const res of held.splice(0)) res.end('go');
    },
    close: () => new Promise((r) => http.close(() => r())),
  };
}

/**
 * The fixture organism plus: `scout` (mock model, tools mode) looks a topic up on a real MCP
 * server over HTTP, then reports to the announcer; `holder` (a code tool) waits for the gate,
 * then hands an announcement on.
 */
export function prepare(mcpUrl: string, gateUrl: string) {
  return (dir: string) => {
    const file = path.join(dir, 'organism.yaml');
    const yaml = readFileSync(file, 'utf8')
      .replace(
        '        writer:\n',
        `        scout:\n          - calls: [{name: facts_lookup, arguments: {topic: "{{text}}"}}]\n          - calls: [{name: send_to_announcer, arguments: {text: "Report: {{result}}"}}]\n        writer:\n`,
      )
      .trimEnd();
    writeFileSync(
      file,
      `${yaml}
  - name: scout
    description: Looks a topic up, then reports
    handler: builtin:llm
    model: mock-1
    prompt: Look the topic up, then report it.
    payload: Question
    peers: [announcer]
    mcp_servers: [facts]
  - name: holder
    description: Waits to be released
    handler: ./gate.ts#hold
    payload: Question
    peers: [announcer]
    # It waits for the test's gate: the 30 s default could end it first on a slow machine.
    timeout_seconds: 600

mcp_servers:
  - name: facts
    url: ${mcpUrl}
`,
    );
    writeFileSync(
      path.join(dir, 'gate.ts'),
      `export const hold = async (payload: Record<string, unknown>) => {
  await (await fetch(${JSON.stringify(gateUrl)})).text();
  return { to: 'announcer', payload: { text: 'released ' + String(payload['text']) }, payloadType: 'Announcement' };
};
`,
    );
  };
}
