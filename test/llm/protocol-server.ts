/**
 * Kept for tests outside test/llm that script an OpenAI-compatible server by reply list. New
 * tests use servers/openai-server.ts and servers/anthropic-server.ts, which also check requests.
 */
import { inTurn, startScriptedServer, type ScriptedReply } from './servers/scripted-server.js';

export { anthropicError, anthropicOk } from './servers/anthropic-server.js';
export { openAiError, openAiOk } from './servers/openai-server.js';
export type { ScriptedReply, SeenRequest } from './servers/scripted-server.js';

/** Answers each request with the next reply of `script` (the last repeats); `aborted` counts clients that left early. */
export async function startProtocolServer(script: ScriptedReply[]) {
  const s = await startScriptedServer(inTurn(script));
  return {
    url: s.url,
    seen: s.seen,
    get aborted() {
      return s.closedEarly;
    },
    close: () => s.close(),
  };
}
