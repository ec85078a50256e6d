/** Abort reasons the pump gives, so a delivery knows why it was cut short. */
export type AbortCause = 'killed' | 'timeout' | 'shutdown';

/**
 * How a delivery is cut short (a kill, its timeout, a shutdown), without an AbortController
 * per delivery: the pump asks `aborted`/`reason` and waits with `onAbort`, and the
 * AbortSignal is made only when someone reads `signal` (a handler's `ctx.signal`, an LLM
 * call). Most handlers never read it; an AbortController and its signal cost every delivery
 * otherwise. The first abort wins, as with an AbortController.
 */
export class Cancellation {
  private cause: AbortCause | null = null;
  private controller: AbortController | null = null;
  private listeners: Array<(cause: AbortCause) => void> | null = null;

  get aborted(): boolean {
    return this.cause !== null;
  }

  /** Why it was cut short, or null. */
  get reason(): AbortCause | null {
    return this.cause;
  }

  /** An AbortSignal that follows this cancellation (aborted already, with its reason, when it is). */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.cause !== null) this.controller.abort(this.cause);
    }
    return this.controller.signal;
  }

  abort(cause: AbortCause): void {
    if (this.cause !== null) return;
    this.cause = cause;
    this.controller?.abort(cause);
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners) for (const listener of listeners) listener(cause);
  }

  /**
   * Calls `listener` when it is cut short from now on (not when it was already: as an abort
   * event listener); returns a function that stops listening.
   */
  onAbort(listener: (cause: AbortCause) => void): () => void {
    if (this.cause !== null) return noop;
    (this.listeners ??= []).push(listener);
    return () => {
      const i = this.listeners?.indexOf(listener) ?? -1;
      if (i >= 0) this.listeners!.splice(i, 1);
    };
  }
}

const noop = () => {};
