/** An HTTP-level failure from a provider: status, the provider's own message, Retry-After. */
export class ProviderHttpError extends Error {
  constructor(
    readonly provider: string,
    readonly status: number,
    readonly providerMessage: string,
    readonly retryAfterMs: number | null,
  ) {
    super(`HTTP ${status}: ${providerMessage}`);
    this.name = 'ProviderHttpError';
  }
}

/** Retry-After is either delay-seconds or an HTTP-date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Reads an error response into a ProviderHttpError, whatever shape the body has. */
export async function errorFromResponse(provider: string, res: Response): Promise<ProviderHttpError> {
  let message = res.statusText || 'request failed';
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
      if (typeof body.error === 'object' && body.error?.message) message = body.error.message;
      else if (typeof body.error === 'string') message = body.error;
      else if (body.message) message = body.message;
    } catch {
      if (text) message = text.slice(0, 300);
    }
  } catch {
    // body unreadable: keep the status text
  }
  return new ProviderHttpError(provider, res.status, message, parseRetryAfter(res.headers.get('retry-after')));
}
