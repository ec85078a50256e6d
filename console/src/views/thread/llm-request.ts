// The request body of a recorded LLM call, as the inspector shows it: whatever the provider's
// wire format (OpenAI chat completions, Anthropic messages, the mock's own), one system prompt,
// the turns the model saw and the tools it was offered. Unknown shapes fall back to raw JSON.

export interface Turn {
  readonly role: string;
  readonly text: string;
  /** Tool calls of an assistant turn (arguments as sent: usually a JSON string). */
  readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>;
  /** A tool result: the call it answers. */
  readonly toolCallId?: string;
  readonly isError?: boolean;
}

export interface OfferedTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: unknown;
}

export interface ReadRequest {
  readonly system: string | null;
  readonly turns: readonly Turn[];
  readonly tools: readonly OfferedTool[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));

/** Anthropic's content: a string or blocks (text, tool_use, tool_result). */
function blocks(role: string, content: unknown): Turn[] {
  if (!Array.isArray(content)) return [{ role, text: str(content), toolCalls: [] }];
  const turns: Turn[] = [];
  const texts: string[] = [];
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  for (const b of content) {
    if (!isObj(b)) continue;
    if (b['type'] === 'text') texts.push(str(b['text']));
    else if (b['type'] === 'tool_use') calls.push({ id: str(b['id']), name: str(b['name']), arguments: JSON.stringify(b['input'] ?? {}) });
    else if (b['type'] === 'tool_result') {
      const inner = Array.isArray(b['content']) ? b['content'].map((x) => (isObj(x) ? str(x['text']) : str(x))).join('\n') : str(b['content']);
      turns.push({ role: 'tool', text: inner, toolCalls: [], toolCallId: str(b['tool_use_id']), ...(b['is_error'] === true ? { isError: true } : {}) });
    }
  }
  if (texts.length > 0 || calls.length > 0) turns.push({ role, text: texts.join('\n'), toolCalls: calls });
  return turns;
}

function turnsOf(messages: unknown[]): { system: string | null; turns: Turn[] } {
  let system: string | null = null;
  const turns: Turn[] = [];
  for (const m of messages) {
    if (!isObj(m)) continue;
    const role = str(m['role']);
    if (role === 'system' || role === 'developer') {
      system = (system ? `${system}\n\n` : '') + str(m['content']);
      continue;
    }
    // OpenAI: tool_calls with function {name, arguments}; the mock: toolCalls {id, name, arguments}.
    const wireCalls = Array.isArray(m['tool_calls']) ? m['tool_calls'] : Array.isArray(m['toolCalls']) ? m['toolCalls'] : null;
    if (wireCalls) {
      const toolCalls = wireCalls.filter(isObj).map((c) => {
        const fn = isObj(c['function']) ? c['function'] : c;
        return { id: str(c['id']), name: str(fn['name']), arguments: str(fn['arguments']) };
      });
      turns.push({ role, text: str(m['content']), toolCalls });
      continue;
    }
    if (role === 'tool') {
      turns.push({ role, text: str(m['content']), toolCalls: [], toolCallId: str(m['tool_call_id'] ?? m['toolCallId']), ...(m['isError'] === true ? { isError: true } : {}) });
      continue;
    }
    turns.push(...blocks(role, m['content']));
  }
  return { system, turns };
}

function toolsOf(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(isObj).map((t) => {
    const fn = isObj(t['function']) ? t['function'] : t;
    return { name: str(fn['name']), description: str(fn['description']), parameters: fn['parameters'] ?? fn['input_schema'] ?? null };
  });
}

/** null when the body is not one of the known shapes (shown raw). */
export function readRequest(body: unknown): ReadRequest | null {
  if (!isObj(body) || !Array.isArray(body['messages'])) return null;
  const { system, turns } = turnsOf(body['messages']);
  // Anthropic and the mock keep the system prompt beside the messages (a string or text blocks).
  const top = body['system'];
  const topText = Array.isArray(top) ? top.map((b) => (isObj(b) ? str(b['text']) : str(b))).join('\n') : typeof top === 'string' && top !== '' ? top : null;
  return { system: topText ?? system, turns, tools: toolsOf(body['tools']) };
}
