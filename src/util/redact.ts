/**
 * Credentials that may appear in a URL (`/ws?token=...`, the browser form of WebSocket auth):
 * their values are replaced before anything is logged.
 */
const TOKEN_IN_URL = /([?&;](?:access_)?token=)[^&#\s"\\]*/gi;

export const REDACTED = '[redacted]';

/** The URL with every `token=` value replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(TOKEN_IN_URL, `$1${REDACTED}`);
}
