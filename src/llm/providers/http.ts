import type { ProviderConfig } from '../../config/types.js';
import { errorFromResponse } from '../http-error.js';

/** Reads the provider's key from its env var at call time (never kept on an object). */
export function apiKey(config: ProviderConfig): string | null {
  return config.apiKeyEnv ? (process.env[config.apiKeyEnv] ?? null) : null;
}

/** True when the provider serves `model`: `models` lists names or prefixes; empty = any. */
export function servesModel(config: ProviderConfig, model: string): boolean {
  return config.models.length === 0 || config.models.some((m) => model === m || model.startsWith(m));
}

/** POSTs JSON with the handler's signal and the provider's timeout; non-2xx -> ProviderHttpError. */
export async function postJson(
  config: ProviderConfig,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.any([signal, AbortSignal.timeout(config.timeoutSeconds * 1000)]),
  });
  if (!res.ok) throw await errorFromResponse(config.name, res);
  return res.json();
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
