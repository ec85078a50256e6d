import { createHmac, timingSafeEqual } from 'node:crypto';

/** Thrown for a secret that is not `whsec_` followed by base64. */
export class WebhookSecretError extends Error {}

/** The key bytes of a Standard Webhooks secret: the base64 after the `whsec_` prefix. */
export function webhookKey(secret: string): Buffer {
  if (!secret.startsWith('whsec_')) throw new WebhookSecretError('the secret must start with whsec_ (followed by base64 of 24 to 64 random bytes)');
  const b64 = secret.slice('whsec_'.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new WebhookSecretError('the secret after whsec_ must be base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length < 24 || key.length > 64) throw new WebhookSecretError(`the secret must decode to 24 to 64 bytes, not ${key.length}`);
  return key;
}

/**
 * The `webhook-signature` header value of the Standard Webhooks spec: `v1,` and the base64
 * HMAC-SHA256 of `<id>.<timestamp>.<body>` under the secret's key.
 */
export function signWebhook(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** True when one of the space-separated signatures of `header` is the right one (a receiver's check). */
export function verifyWebhook(key: Buffer, id: string, timestampSeconds: number, body: string, header: string): boolean {
  const expected = Buffer.from(signWebhook(key, id, timestampSeconds, body));
  return header.split(' ').some((sig) => {
    const got = Buffer.from(sig);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
