import { createServer, type Server } from 'node:http';
import { verifyWebhook, webhookKey } from '../../src/util/webhook-signature.js';

export interface ReceivedWebhook {
  readonly id: string;
  readonly timestamp: number;
  readonly type: string;
  readonly body: { type: string; timestamp: string; data: Record<string, unknown> };
}

/**
 * A webhook receiver as another system would run one (node:http): it checks every request's
 * Standard Webhooks signature (a bad one is a test failure, kept in `badSignatures`), answers
 * `status()` (500 while the test wants it down), and keeps what it accepted once per id.
 */
export class WebhookReceiver {
  readonly accepted = new Map<string, ReceivedWebhook>();
  /** Requests refused with a 5xx (every try counts). */
  refusedTries = 0;
  /** Requests that came again after being accepted (at-least-once: allowed, deduplicated here). */
  duplicates = 0;
  readonly badSignatures: string[] = [];
  status: () => number = () => 200;
  private server: Server | null = null;
  url = '';

  constructor(private readonly secret: string) {}

  async start(): Promise<string> {
    const key = webhookKey(this.secret);
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const id = String(req.headers['webhook-id'] ?? '');
        const timestamp = Number(req.headers['webhook-timestamp']);
        const signature = String(req.headers['webhook-signature'] ?? '');
        if (!verifyWebhook(key, id, timestamp, body, signature) || Math.abs(Date.now() / 1000 - timestamp) > 300) {
          this.badSignatures.push(id);
          res.writeHead(401).end();
          return;
        }
        const status = this.status();
        if (status >= 300) {
          this.refusedTries++;
          res.writeHead(status).end('down');
          return;
        }
        if (this.accepted.has(id)) this.duplicates++;
        else {
          const parsed = JSON.parse(body) as ReceivedWebhook['body'];
          this.accepted.set(id, { id, timestamp, type: parsed.type, body: parsed });
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`;
    return this.url;
  }

  ofType(type: string): ReceivedWebhook[] {
    return [...this.accepted.values()].filter((w) => w.type === type);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A fresh `whsec_` secret (32 random bytes). */
export function newWebhookSecret(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return `whsec_${Buffer.from(bytes).toString('base64')}`;
}
