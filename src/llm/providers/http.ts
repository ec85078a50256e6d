import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import type { ProviderConfig } from '../../config/types.js';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import { errorFromResponse, ProviderHttpError } from '../http-error.js';

/** Reads the provider's key from its env var at call time (never kept on an object). */
export function apiKey(config: ProviderConfig): string | null {
  return config.apiKeyEnv ? (process.env[config.apiKeyEnv] || null) : null;
}

/** True when the provider serves `model`: `models` lists names or prefixes; empty = any. */
export function servesModel(config: ProviderConfig, model: string): boolean {
  return config.models.length === 0 || config.models.some((m) => model === m || model.startsWith(m));
}

/** How the provider answered: a server-sent event stream (already handed to `onEvent`), or one JSON object. */
export type PostOutcome = { readonly streamed: true } | { readonly streamed: false; readonly body: object };

/**
 * POSTs JSON with the handler's signal and the provider's timeout. An event stream
 * (`text/event-stream`) is read event by event into `onEvent`; any other 2xx must be a JSON
 * object (a server that ignores `stream: true`). Failures come out classified: non-2xx ->
 * ProviderHttpError; the caller's abort -> ABORTED; the timeout -> LLM_TIMEOUT; no connection or
 * a connection lost mid-stream -> LLM_NETWORK; a 2xx that is not JSON -> LLM_BAD_RESPONSE. None
 * of these texts can contain the request's headers (the key).
 */
export async function postStreaming(
  config: ProviderConfig,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  onEvent: (event: EventSourceMessage) => void,
): Promise<PostOutcome> {
  const timeout = AbortSignal.timeout(config.timeoutSeconds * 1000);
  // Errors thrown by onEvent are the provider's verdict on what it read: passed on as they are.
  let verdict: unknown = null;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream, application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout]),
    });
    if (!res.ok) throw await errorFromResponse(config.name, res, apiKey(config));
    if (/text\/event-stream/i.test(res.headers.get('content-type') ?? '') && res.body) {
      const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const event of events) {
        try {
          onEvent(event);
        } catch (err) {
          verdict = err;
          throw err;
        }
      }
      return { streamed: true };
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw Errors.LLM_BAD_RESPONSE(`not JSON (${text.slice(0, 80)})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw Errors.LLM_BAD_RESPONSE(`not a JSON object (${text.slice(0, 80)})`);
    return { streamed: false, body: parsed };
  } catch (err) {
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    if (timeout.aborted) throw Errors.LLM_TIMEOUT(config.timeoutSeconds);
    if (err === verdict || err instanceof OrganismError || err instanceof ProviderHttpError) throw err;
    if (err instanceof TypeError) throw Errors.LLM_NETWORK(networkReason(err));
    throw err;
  }
}

/** Parses one event's JSON data; anything else is the provider's bad response. */
export function eventJson(event: EventSourceMessage): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(event.data);
  } catch {
    throw Errors.LLM_BAD_RESPONSE(`stream event is not JSON (${event.data.slice(0, 80)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw Errors.LLM_BAD_RESPONSE(`stream event is not a JSON object (${event.data.slice(0, 80)})`);
  }
  return parsed as Record<string, unknown>;
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

/** A short view of a JSON value for error texts. */
export function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
