/**
 * A local OpenAI-compatible server that answers with hostile replies: the attack is named in
 * the text the harness injected (`attack:<name>`), which reaches the model in the prompt. The
 * replies are the probes of issue 16: about 1 MB each of unclosed `<send` openings, an
 * unclosed element followed by long text, deep nesting, a valid reply far over any sane
 * size, and one reply sending thousands of messages.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const MB = 1_000_000;
const SEND = (text: string) => `<send to="sink"><Result><text>${text}</text></Result></send>`;

export const ATTACKS = {
  'unclosed-send': () => '<send '.repeat(MB / 6),
  'unclosed-text': () => `<send to="sink"><Result><text>${'x'.repeat(MB)}`,
  'deep-nesting': () => `<send to="sink"><Result><text>${'<a>'.repeat(MB / 3)}`,
  'huge-valid': () => SEND('y'.repeat(MB)),
  'many-sends': () => Array.from({ length: 2_000 }, (_, i) => SEND(`n${i}`)).join('\n'),
} as const;
export type Attack = keyof typeof ATTACKS;
export const ATTACK_NAMES = Object.keys(ATTACKS) as Attack[];

export class HostileLlm {
  private server: Server | null = null;
  readonly served = new Map<Attack, number>();

  async start(): Promise<string> {
    const replies = new Map(ATTACK_NAMES.map((a) => [a, ATTACKS[a]()] as const));
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const attack = ATTACK_NAMES.find((a) => text.includes(`attack:${a}`));
        const content = attack ? replies.get(attack)! : '<done/>';
        if (attack) this.served.set(attack, (this.served.get(attack) ?? 0) + 1);
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'chatcmpl-chaos',
            object: 'chat.completion',
            model: 'hostile-1',
            choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 100, completion_tokens: 100, total_tokens: 200 },
          }),
        );
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
