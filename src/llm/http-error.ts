import { Errors } from '../errors/catalogue.js';
import { readUpTo } from './read-capped.js';

/** An error body is read up to this much: its message is all we keep, and a server may send anything. */
export const ERROR_BODY_LIMIT = 16 * 1024;

/**
 * An HTTP-level failure from a provider: status, the provider's own message and Retry-After.
 * Its text never holds request headers, so an API key cannot leak through it.
 */
export class ProviderHttpError extends Error {
  constructor(
    readonly provider: string,
    /** The provider's HTTP status (not the control service's). */
    readonly status: number,
    readonly providerMessage: string,
    readonly retryAfterMs: number | null,
  ) {
    super(Errors.LLM_HTTP_STATUS(status, providerMessage).detail);
    this.name = 'ProviderHttpError';
  }
}

/** Retry-After is either delay-seconds or an HTTP-date; anything else is ignored. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  // An HTTP-date names its weekday and month; Date.parse alone would read "-3" as a year.
  if (!/[a-z]{3}/i.test(trimmed)) return null;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Most providers: `{error: {message}}`; Anthropic adds `type: "error"`; some proxies send `{error: "..."}` or `{message}`. */
function messageOf(text: string): string | null {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === 'object' && typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.error === 'string') return body.error;
    if (typeof body.message === 'string') return body.message;
    return null;
  } catch {
    return text ? text.slice(0, 300) : null;
  }
}

/**
 * Reads an error response into a ProviderHttpError, whatever shape the body has (its first
 * ERROR_BODY_LIMIT bytes; the rest is left unread). A server that echoes the key back in its
 * message (some proxies do) gets it cut out.
 */
export async function errorFromResponse(provider: string, res: Response, secret: string | null = null): Promise<ProviderHttpError> {
  let message: string | null = null;
  try {
    message = messageOf((await readUpTo(res.body, ERROR_BODY_LIMIT)).bytes.toString('utf8'));
  } catch {
    // body unreadable: keep the status text
  }
  message ??= res.statusText || 'request failed';
  if (secret) message = message.split(secret).join('[redacted]');
  return new ProviderHttpError(provider, res.status, message, parseRetryAfter(res.headers.get('retry-after')));
}
