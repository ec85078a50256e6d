// The LLM call inspector: every recorded provider attempt of a thread or an agent (failed ones
// and retries included), each opening to what the model was sent, what it answered, the tools it
// ran and what that cost. The data is GET /threads/{id}/llm-calls and GET /agents/{name}/llm-calls,
// operators only (prompts can hold sensitive data): a viewer gets a note instead.
import { useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { api, ApiError, type AgentInfo, type JournalEntry, type LlmCall } from '../../api';
import { ThreadLink } from '../../lists';
import { useIsOperator, useRefetchOn } from '../../session';
import { ErrorBox, fmt, Loading, StateBadge } from '../../ui';
import { highlightJson, prettyJson } from './highlight';
import { readRequest, type Turn } from './llm-request';
import './inspector.css';

/** Longer than this (lines or characters), a block starts collapsed. */
const CLIP_LINES = 12;
const CLIP_CHARS = 1200;
/** What a collapsed block shows. */
const CLIPPED_LINES = 4;

const VIEWER_NOTE = 'LLM calls (prompts, answers, tool arguments and results) are shown to operators only: they can hold sensitive data, and your token has the viewer role.';

function ViewerNote() {
  return (
    <p className="inspector-note" role="note">
      {VIEWER_NOTE}
    </p>
  );
}

const forbidden = (err: unknown) => err instanceof ApiError && err.status === 403;

/** The calls of one thread, oldest first, live while it runs. */
export function ThreadLlmCalls({ threadId }: { threadId: string }) {
  const operator = useIsOperator();
  const q = useQuery({ queryKey: ['thread-llm-calls', threadId], queryFn: () => api.threadLlmCalls(threadId), enabled: operator });
  useRefetchOn(
    (f: { event: string; [k: string]: unknown }) =>
      (f['message'] as { threadId?: string } | undefined)?.threadId === threadId ||
      (f['usage'] as { threadId?: string } | undefined)?.threadId === threadId ||
      (f['thread'] as { id?: string } | undefined)?.id === threadId ||
      f['threadId'] === threadId,
    [['thread-llm-calls', threadId]],
    500,
  );
  if (!operator || forbidden(q.error)) return <ViewerNote />;
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what="LLM calls" />;
  return (
    <>
      {q.data.total > q.data.count && (
        <p className="muted">
          The first {q.data.count} of {q.data.total} calls (the rest:{' '}
          <code>
            GET /api/v1/threads/{threadId}/llm-calls?offset={q.data.count}
          </code>
          ).
        </p>
      )}
      <CallList calls={q.data.calls} empty="No LLM call recorded for this thread (yet, or llm.record is off)." />
    </>
  );
}

/** The latest calls of one agent across its threads, newest first. */
export function AgentLlmCalls({ name }: { name: string }) {
  const operator = useIsOperator();
  const q = useQuery({ queryKey: ['agent-llm-calls', name], queryFn: () => api.agentLlmCalls(name), enabled: operator });
  useRefetchOn((f) => f.event === 'message' && [(f['message'] as { from?: string }).from, (f['message'] as { to?: string }).to].includes(name), [['agent-llm-calls', name]], 1500);
  if (!operator || forbidden(q.error)) return <ViewerNote />;
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what="LLM calls" />;
  return (
    <>
      {q.data.total > q.data.count && (
        <p className="muted">
          The latest {q.data.count} of {q.data.total} calls.
        </p>
      )}
      <CallList calls={q.data.calls} showThread empty="No LLM call recorded for this agent (yet, or llm.record is off)." />
    </>
  );
}

function CallList({ calls, showThread = false, empty }: { calls: readonly LlmCall[]; showThread?: boolean; empty: string }) {
  // Open calls by id, so a live refetch keeps them open.
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  if (calls.length === 0) return <p className="muted">{empty}</p>;
  return (
    <ol className="llm-calls" aria-label="LLM calls">
      {calls.map((c) => {
        const failed = c.error !== null;
        return (
          <li key={c.id} className={`llm-call${failed ? ' failed' : ''}`}>
            <button type="button" className="llm-call-head" aria-expanded={open.has(c.id)} onClick={() => toggle(c.id)}>
              <span className="time">{fmt.time(c.startedAt)}</span>
              <strong>{c.agent}</strong>
              <span>{c.provider ? `${c.provider} · ${c.model}` : c.model}</span>
              {c.guard?.stage !== 'input' && <span className="muted">attempt {c.attempt}</span>}
              {c.repair && <span className="badge state-paused">repair</span>}
              {c.guard ? (
                <span className="badge state-failed" title={`${c.guard.name}: ${c.guard.reason}`}>
                  guardrail: {c.guard.name} ({c.guard.stage})
                </span>
              ) : failed ? (
                <span className="badge state-failed">failed</span>
              ) : (
                <span className="muted">{c.response?.finishReason ?? ''}</span>
              )}
              {c.response && c.response.toolCalls.length > 0 && <span className="muted">{c.response.toolCalls.map((t) => t.name).join(', ')}</span>}
              <span className="spacer" />
              {c.usage && (
                <span className="muted">
                  {fmt.int(c.usage.promptTokens)}/{fmt.int(c.usage.completionTokens)} tokens
                </span>
              )}
              <span className="muted">{Math.round(c.latencyMs)} ms</span>
              <span className="muted">{c.cost === null ? (failed ? '' : 'unpriced') : fmt.usd(c.cost)}</span>
            </button>
            {open.has(c.id) && <CallDetail call={c} calls={calls} showThread={showThread} />}
          </li>
        );
      })}
    </ol>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="llm-section" aria-label={title}>
      <h4>{title}</h4>
      {children}
    </section>
  );
}

function CallDetail({ call: c, calls, showThread }: { call: LlmCall; calls: readonly LlmCall[]; showThread: boolean }) {
  const metadataOnly = c.record === 'metadata';
  const read = metadataOnly ? null : readRequest(c.request);
  return (
    <section className="llm-call-body" aria-label={`LLM call ${c.id}`}>
      <dl className="llm-facts">
        <dt>Provider</dt>
        <dd>{c.provider}</dd>
        <dt>Model</dt>
        <dd>
          {c.model}
          {c.responseModel && c.responseModel !== c.model ? ` (answered by ${c.responseModel})` : ''}
        </dd>
        <dt>Attempt</dt>
        <dd>{c.attempt}</dd>
        <dt>Repair</dt>
        <dd>{c.repair ? 'yes: asked the model to fix an invalid answer' : 'no'}</dd>
        <dt>Finish reason</dt>
        <dd>{c.response?.finishReason ?? '—'}</dd>
        <dt>Usage</dt>
        <dd>
          {c.usage
            ? `${fmt.int(c.usage.promptTokens)} in, ${fmt.int(c.usage.completionTokens)} out, ${fmt.int(c.usage.totalTokens)} total${
                c.usage.cacheReadTokens ? `, ${fmt.int(c.usage.cacheReadTokens)} cache read` : ''
              }${c.usage.reasoningTokens ? `, ${fmt.int(c.usage.reasoningTokens)} reasoning` : ''}`
            : '—'}
          {c.maxOutputTokens !== null && <span className="muted"> (output cap {fmt.int(c.maxOutputTokens)})</span>}
          {c.overOutputCap && <span className="badge state-failed">over the output cap</span>}
        </dd>
        <dt>Cost</dt>
        <dd>{c.cost === null ? (c.usage ? 'unpriced' : '—') : fmt.usd(c.cost)}</dd>
        <dt>Latency</dt>
        <dd>{Math.round(c.latencyMs)} ms</dd>
        <dt>Started</dt>
        <dd>{fmt.dateTime(c.startedAt)}</dd>
        {showThread && (
          <>
            <dt>Thread</dt>
            <dd>
              <ThreadLink id={c.threadId} />
            </dd>
          </>
        )}
        <dt>Delivery</dt>
        <dd>{c.messageId ? <code>{c.messageId}</code> : '—'}</dd>
      </dl>
      {c.guard ? (
        <p className="error" role="alert">
          <span className="badge state-failed">guardrail</span> <strong>{c.guard.name}</strong> blocked the{' '}
          {c.guard.stage === 'input' ? 'input (nothing was sent to the provider)' : 'answer'}: {c.guard.reason}
        </p>
      ) : (
        c.error && (
          <p className="error" role="alert">
            <strong>Error:</strong> {c.error}
          </p>
        )
      )}
      {metadataOnly && (
        <p className="inspector-note" role="note">
          Content not recorded (<code>llm.record: metadata</code>): the prompt, the answer text, tool arguments and results are not kept; names, usage and timings are.
        </p>
      )}
      {!metadataOnly && (
        <Section title="Messages sent">
          {read ? (
            <>
              <h5>System prompt</h5>
              {read.system ? <Block text={read.system} label="system prompt" /> : <p className="muted">none</p>}
              <ol className="llm-turns">
                {read.turns.map((t, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: the turns of one recorded request never change
                  <TurnView key={i} turn={t} />
                ))}
              </ol>
            </>
          ) : c.request === null ? (
            <p className="muted">The request was not recorded (the call failed before it was built).</p>
          ) : (
            <Block value={c.request} label="request" />
          )}
        </Section>
      )}
      <Section title="Tools offered">
        {c.tools.length === 0 ? (
          <p className="muted">none</p>
        ) : read && read.tools.length > 0 ? (
          <ul className="llm-tools">
            {read.tools.map((t) => (
              <li key={t.name}>
                <code>{t.name}</code> <span className="muted">{t.description}</span>
                <Block value={t.parameters} label={`${t.name} parameters`} collapsed />
              </li>
            ))}
          </ul>
        ) : (
          <p>
            {c.tools.map((t) => (
              <code key={t}>{t} </code>
            ))}
          </p>
        )}
      </Section>
      <Section title="Answer">
        {c.response === null ? (
          <p className="muted">{c.error ? 'No answer: the attempt failed.' : 'none'}</p>
        ) : (
          <>
            {c.response.text !== null && c.response.text !== '' && <Block text={c.response.text} label="answer text" />}
            {c.response.text === '' && c.response.toolCalls.length === 0 && <p className="muted">(empty text)</p>}
            {c.response.toolCalls.map((t) => (
              <fieldset key={t.id} className="llm-toolcall" aria-label={`Tool call ${t.name}`}>
                <div>
                  <strong>{t.name}</strong> <code className="muted">{t.id}</code>
                </div>
                {t.arguments === null ? <p className="muted">arguments not recorded</p> : <Block value={t.arguments} label={`${t.name} arguments`} />}
              </fieldset>
            ))}
          </>
        )}
      </Section>
      <Executions call={c} calls={calls} />
      {!metadataOnly && c.request !== null && (
        <Section title="Raw request">
          <Block value={c.request} label="raw request" collapsed />
        </Section>
      )}
    </section>
  );
}

function TurnView({ turn: t }: { turn: Turn }) {
  return (
    <li className={`llm-turn role-${t.role}`}>
      <div className="llm-turn-role">
        {t.role}
        {t.toolCallId ? <span className="muted"> (result of {t.toolCallId})</span> : null}
        {t.isError ? <span className="badge state-failed">error</span> : null}
      </div>
      {t.text !== '' && <Block text={t.text} label={`${t.role} turn`} />}
      {t.toolCalls.map((c) => (
        <div key={c.id} className="llm-toolcall">
          <strong>{c.name}</strong> <code className="muted">{c.id}</code>
          <Block value={c.arguments} label={`${c.name} arguments`} />
        </div>
      ))}
    </li>
  );
}

/** Tool calls (MCP and the agent's code tools), and the deliveries of the messages this call's send/reply calls became (code listeners run there). */
function Executions({ call: c, calls }: { call: LlmCall; calls: readonly LlmCall[] }) {
  const journal = useQuery({ queryKey: ['thread-journal', c.threadId], queryFn: () => api.journal({ threadId: c.threadId, limit: 100, offset: 0 }) });
  const agents = useQuery({ queryKey: ['agents'], queryFn: api.agents });
  const sent = sentDeliveries(c, calls, journal.data?.entries ?? []);
  const kinds = new Map<string, AgentInfo>((agents.data?.agents ?? []).map((a) => [a.name, a]));
  if (c.toolExecutions.length === 0 && sent.length === 0) return null;
  return (
    <Section title="Tool executions">
      <ul className="llm-execs">
        {c.toolExecutions.map((t) => (
          <li key={t.id} aria-label={t.kind === 'code' ? `Code tool ${t.tool}` : `MCP ${t.server}.${t.tool}`}>
            <div>
              {t.kind === 'code' ? (
                <>
                  <span className="badge">code</span> <strong>{t.tool}</strong> <code className="muted">{t.server}</code>
                </>
              ) : (
                <>
                  <span className="badge">MCP</span> <strong>{t.server}</strong>.<strong>{t.tool}</strong>
                </>
              )}{' '}
              <span className="muted">{Math.round(t.durationMs)} ms</span> {t.isError && <span className="badge state-failed">error</span>}
            </div>
            <h5>Arguments</h5>
            {t.arguments === null ? <p className="muted">not recorded</p> : <Block value={t.arguments} label={`${t.tool} arguments`} />}
            <h5>Result</h5>
            {t.error ? <p className="error">{t.error}</p> : t.result === null ? <p className="muted">not recorded</p> : <Block text={t.result} label={`${t.tool} result`} />}
          </li>
        ))}
        {sent.map(({ tool, entry }) => {
          const kind = kinds.get(entry.to);
          const end = entry.ackedAt ?? entry.failedAt;
          const ms = end && entry.dispatchedAt ? Date.parse(end) - Date.parse(entry.dispatchedAt) : null;
          return (
            <li key={entry.id} aria-label={`Delivery to ${entry.to}`}>
              <div>
                <span className="badge">{kind ? (kind.isAgent ? 'LLM agent' : 'code tool') : 'delivery'}</span> <code>{tool}</code> → <strong>{entry.to}</strong>{' '}
                <StateBadge state={entry.deliveryState} /> {ms !== null && <span className="muted">{ms} ms handler</span>}
              </div>
              <h5>Payload ({entry.payloadType})</h5>
              <Block value={entry.payload} label={`payload to ${entry.to}`} />
              {entry.error && (
                <p className="error">
                  {entry.failureReason}: {entry.error}
                </p>
              )}
            </li>
          );
        })}
      </ul>
    </Section>
  );
}

/**
 * The journal entries this call's send/reply tool calls became. A delivery's messages go out when
 * its last answer is complete, in the order they were called; a refused answer (before a repair
 * round) sent nothing, so the entries are matched from the delivery's latest call backwards.
 */
function sentDeliveries(c: LlmCall, calls: readonly LlmCall[], entries: readonly JournalEntry[]): Array<{ tool: string; entry: JournalEntry }> {
  if (!c.messageId) return [];
  const incoming = entries.find((e) => e.id === c.messageId);
  const children = entries.filter((e) => e.parentId === c.messageId && e.from === c.agent).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  const target = (tool: string) => (tool === 'reply' ? (incoming?.from ?? null) : tool.startsWith('send_to_') ? tool.slice('send_to_'.length) : null);
  const safe = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, '_');
  const left = [...children];
  const siblings = calls.filter((x) => x.messageId === c.messageId && !x.error).sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  for (const s of siblings) {
    const mine: Array<{ tool: string; entry: JournalEntry }> = [];
    for (const t of [...(s.response?.toolCalls ?? [])].reverse()) {
      const to = target(t.name);
      if (to === null) continue;
      const at = left.findLastIndex((e) => safe(e.to) === to || e.to === to);
      if (at < 0) continue;
      mine.unshift({ tool: t.name, entry: left[at]! });
      left.splice(at, 1);
    }
    if (s.id === c.id) return mine;
  }
  return [];
}

/** Text or a JSON value, collapsed past CLIP_LINES / CLIP_CHARS, with a copy button. */
function Block({ text, value, label, collapsed }: { text?: string; value?: unknown; label: string; collapsed?: boolean }) {
  const shown = text !== undefined ? { text, json: false } : prettyJson(value);
  const lines = shown.text.split('\n').length;
  const long = collapsed || lines > CLIP_LINES || shown.text.length > CLIP_CHARS;
  const [expanded, setExpanded] = useState(false);
  const clip = long && !expanded;
  const body = clip ? clipText(shown.text) : shown.text;
  return (
    <figure className="llm-block" aria-label={label}>
      <pre className={`json${clip ? ' clipped' : ''}`}>{shown.json ? highlightJson(body) : body}</pre>
      <div className="llm-block-actions">
        {long && (
          <button type="button" className="link" onClick={() => setExpanded(!expanded)} aria-label={`${expanded ? 'Collapse' : 'Expand'} ${label}`}>
            {expanded ? 'Show less' : `Show all (${fmt.int(lines)} lines, ${fmt.int(shown.text.length)} characters)`}
          </button>
        )}
        <CopyButton text={shown.text} label={label} />
      </div>
    </figure>
  );
}

function clipText(text: string): string {
  const head = text.split('\n').slice(0, CLIPPED_LINES).join('\n');
  return head.length > CLIP_CHARS / 2 ? `${head.slice(0, CLIP_CHARS / 2)}…` : `${head}${head.length < text.length ? '\n…' : ''}`;
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed'); // no clipboard outside a secure context (plain http to a remote host)
    }
    setTimeout(() => setState('idle'), 1500);
  };
  return (
    <button type="button" className="link" onClick={() => void copy()} aria-label={`Copy ${label}`}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : 'Copy'}
    </button>
  );
}
