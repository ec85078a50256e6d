import { ExitCode } from './exit-codes.js';

/**
 * What `organism serve` checks before it loads anything: kept apart from serve.ts so the
 * supervisor, which only owns the socket and restarts the server process, does not load the whole server.
 */
export class ServeError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|\[::1\])$/;

/** Refuses to expose an unauthenticated API beyond loopback (checked before anything binds). */
export function checkBindable(host: string, auth: boolean): void {
  if (!auth && !LOOPBACK.test(host)) {
    throw new ServeError(`refusing to bind ${host} with authentication disabled; use a loopback host or enable auth`, ExitCode.LISTEN);
  }
}
