import { Errors } from '../errors/catalogue.js';
import type { PayloadType } from '../payload/index.js';
import type { CodeTool, ToolContext } from './code-tool.js';

/** What one code tool call gave the model: its text, and whether it is an error. */
export interface CodeToolOutcome {
  readonly text: string;
  readonly isError: boolean;
  /** Why the call failed (invalid arguments, a throw, its timeout, a result that is not JSON); null when it ran. */
  readonly error: string | null;
}

/** The longest timer Node keeps (about 24.8 days); longer ones fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs one call of a code tool inside the delivery. The arguments are validated against the
 * tool's input type first (invalid ones never reach the function). The function gets a signal
 * that aborts at the tool's timeout and when the delivery is aborted (kill, the listener's
 * timeout, shutdown); the call does not wait for a function that ignores it. Invalid arguments,
 * a throw, a timeout and a result that cannot be JSON come back as error outcomes for the model;
 * an abort of the delivery throws ABORTED.
 */
export async function runCodeTool(tool: CodeTool, type: PayloadType, args: Record<string, unknown>, ctx: ToolContext): Promise<CodeToolOutcome> {
  const checked = type.validate(args);
  if (!checked.ok) {
    return failed(Errors.CODE_TOOL_INVALID_INPUT(tool.name, checked.errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ')).message);
  }
  const delivery = ctx.signal;
  if (delivery.aborted) throw Errors.ABORTED(String(delivery.reason ?? 'aborted'));
  const controller = new AbortController();
  const passOn = () => controller.abort(delivery.reason);
  delivery.addEventListener('abort', passOn, { once: true });
  let timedOut = false;
  const timer =
    tool.timeoutSeconds === null
      ? null
      : setTimeout(
          () => {
            timedOut = true;
            controller.abort(Errors.CODE_TOOL_TIMEOUT(tool.name, tool.timeoutSeconds ?? 0));
          },
          Math.min(MAX_TIMER_MS, tool.timeoutSeconds * 1000),
        );
  const stopped = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }));
  stopped.catch(() => {});
  try {
    const value = await Promise.race([Promise.resolve().then(() => tool.run(checked.value, { ...ctx, signal: controller.signal })), stopped]);
    return resultOf(tool.name, value);
  } catch (err) {
    if (delivery.aborted) throw Errors.ABORTED(String(delivery.reason ?? 'aborted'));
    if (timedOut) return failed(Errors.CODE_TOOL_TIMEOUT(tool.name, tool.timeoutSeconds ?? 0).message);
    return failed(Errors.CODE_TOOL_FAILED(tool.name, err instanceof Error ? err.message : String(err)).message);
  } finally {
    if (timer) clearTimeout(timer);
    delivery.removeEventListener('abort', passOn);
  }
}

/** A string as it is; anything else as JSON (`undefined` as `null`). */
function resultOf(tool: string, value: unknown): CodeToolOutcome {
  if (typeof value === 'string') return { text: value, isError: false, error: null };
  try {
    return { text: JSON.stringify(value) ?? 'null', isError: false, error: null };
  } catch (err) {
    return failed(Errors.CODE_TOOL_BAD_RESULT(tool, err instanceof Error ? err.message : String(err)).message);
  }
}

function failed(message: string): CodeToolOutcome {
  return { text: message, isError: true, error: message };
}
