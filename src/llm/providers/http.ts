import type { ProviderConfig } from '../../config/types.js';
import { Errors } from '../../errors/catalogue.js';
import { errorFromResponse } from '../http-error.js';

/** Reads the provider's key from its env var at call time (never kept on an object). */
export function apiKey(config: ProviderConfig): string | null {
  return config.apiKeyEnv ? (process.env[config.apiKeyEnv] || null) : null;
}

/** True when the provider serves `model`: `models` lists names or prefixes; empty = any. */
export function servesModel(config: ProviderConfig, model: string): boolean {
  return config.models.length === 0 || config.models.some((m) => model === m || model.startsWith(m));
}

/**
 * POSTs JSON with the handler's signal and the provider's timeout and returns the parsed body.
 * Failures come out classified: non-2xx -> ProviderHttpError; the caller's abort -> ABORTED;
 * the timeout -> LLM_TIMEOUT; no connection -> LLM_NETWORK; a 2xx that is not JSON ->
 * LLM_BAD_RESPONSE. None of these texts can contain the request's headers (the key).
 */
export async function postJson(
  config: ProviderConfig,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<object> {
  const timeout = AbortSignal.timeout(config.timeoutSeconds * 1000);
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout]),
    });
    if (!res.ok) throw await errorFromResponse(config.name, res, apiKey(config));
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw Errors.LLM_BAD_RESPONSE(`not JSON (${text.slice(0, 80)})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw Errors.LLM_BAD_RESPONSE(`not a JSON object (${text.slice(0, 80)})`);
    return parsed;
  } catch (err) {
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    if (timeout.aborted) throw Errors.LLM_TIMEOUT(config.timeoutSeconds);
    if (err instanceof TypeError) throw Errors.LLM_NETWORK(networkReason(err));
    throw err;
  }
}

/** fetch says only "fetch failed"; the reason (ECONNREFUSED, ...) is in its cause. */
function networkReason(err: TypeError): string {
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return err.message;
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
