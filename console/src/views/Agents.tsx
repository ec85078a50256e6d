import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { api, type AgentInfo, type Capability } from '../api';
import { ThreadLink } from '../lists';
import { useLive } from '../live';
import { useIsOperator, useRefetchOn } from '../session';
import { useTick } from '../tick';
import { Card, ErrorBox, fmt, Json, Loading, OpButton, StateBadge } from '../ui';
import { AgentLlmCalls } from './thread/LlmCallInspector';

/** Pause/Resume buttons with the accessible names `Pause <name>` / `Resume <name>`. */
export function PauseResume({ agent }: { agent: AgentInfo }) {
  const qc = useQueryClient();
  const pause = useMutation({ mutationFn: () => api.pause(agent.name), onSuccess: () => qc.invalidateQueries({ queryKey: ['agents'] }) });
  const resume = useMutation({ mutationFn: () => api.resume(agent.name), onSuccess: () => qc.invalidateQueries({ queryKey: ['agents'] }) });
  const paused = agent.state === 'paused';
  return (
    <span className="actions">
      <OpButton aria-label={`Pause ${agent.name}`} disabled={paused || pause.isPending} onClick={() => pause.mutate()}>
        Pause
      </OpButton>
      <OpButton aria-label={`Resume ${agent.name}`} disabled={!paused || resume.isPending} onClick={() => resume.mutate()}>
        Resume
      </OpButton>
      <ErrorBox error={pause.error ?? resume.error} />
    </span>
  );
}

function latest(a: string | null, b: string | null): string | null {
  return a === null ? b : b === null ? a : a > b ? a : b;
}

/** REST list for the static parts, live states from the socket. */
function useAgents(): { agents: AgentInfo[]; error: unknown } {
  const live = useLive();
  const q = useQuery({ queryKey: ['agents'], queryFn: api.agents });
  const agents = (q.data?.agents ?? [...live.agents.values()]).map((a) => {
    const l = live.agents.get(a.name);
    // Each process of a cluster reports its own agent states: one going idle must not blank what the REST list says another runs.
    return l ? { ...a, state: l.state, currentThread: l.currentThread ?? a.currentThread, lastActivity: latest(l.lastActivity, a.lastActivity) } : a;
  });
  return { agents, error: q.error };
}

export function AgentsView() {
  useTick(5000);
  const { agents, error } = useAgents();
  useRefetchOn((f) => f.event === 'message', [['agents']], 3000);
  return (
    <div>
      <h1>Agents</h1>
      <ErrorBox error={error} />
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Kind</th>
            <th>State</th>
            <th>Queue</th>
            <th>Current thread</th>
            <th>Last activity</th>
            <th>Messages</th>
            <th>Model</th>
            <th>Peers</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {agents.map((a) => (
            <tr key={a.name}>
              <td>
                <Link to="/agents/$name" params={{ name: a.name }}>
                  {a.name}
                </Link>
              </td>
              <td>{a.isAgent ? 'LLM agent' : 'code tool'}</td>
              <td>
                <StateBadge state={a.state} />
              </td>
              <td>{a.queueDepth}</td>
              <td>{a.currentThread ? <ThreadLink id={a.currentThread} short /> : '—'}</td>
              <td>{fmt.ago(a.lastActivity)}</td>
              <td>{fmt.int(a.messageCount)}</td>
              <td>{a.model ?? '—'}</td>
              <td>{a.peers.join(', ') || '—'}</td>
              <td>
                <PauseResume agent={a} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function AgentDetailView() {
  const { name = '' } = useParams({ strict: false }) as { name?: string };
  const operator = useIsOperator();
  const live = useLive();
  const q = useQuery({ queryKey: ['agents', name], queryFn: () => api.agent(name) });
  // Operators get the JSON Schema and example (capabilities); viewers the XSD.
  const cap = useQuery({ queryKey: ['capability', name], queryFn: () => api.capability(name), enabled: operator });
  const xsd = useQuery({ queryKey: ['agent-schema', name], queryFn: () => api.agentSchema(name), enabled: !operator });
  const usage = useQuery({ queryKey: ['agent-usage', name], queryFn: () => api.agentUsage(name) });
  const recent = useQuery({ queryKey: ['agent-messages', name], queryFn: () => api.messages({ agent: name, limit: 20 }) });
  useRefetchOn(
    (f) => f.event === 'message' && [(f['message'] as { from: string }).from, (f['message'] as { to: string }).to].includes(name),
    [
      ['agents', name],
      ['agent-messages', name],
    ],
    1500,
  );
  useRefetchOn((f) => f.event === 'usage' && (f['usage'] as { agentId: string }).agentId === name, [['agent-usage', name]], 2000);
  if (q.error) return <ErrorBox error={q.error} />;
  if (!q.data) return <Loading what={name} />;
  const l = live.agents.get(name);
  const a = l ? { ...q.data, state: l.state, currentThread: l.currentThread ?? q.data.currentThread } : q.data;
  return (
    <div className="grid">
      <h1 className="span-all">
        {a.name} <StateBadge state={a.state} />
      </h1>
      <Card title="Agent">
        <p>{a.description}</p>
        <dl>
          <dt>Kind</dt>
          <dd>{a.isAgent ? 'LLM agent' : 'code tool'}</dd>
          <dt>Model</dt>
          <dd>{a.model ?? '—'}</dd>
          <dt>Queue depth</dt>
          <dd>{a.queueDepth}</dd>
          <dt>Current thread</dt>
          <dd>{a.currentThread ? <ThreadLink id={a.currentThread} /> : '—'}</dd>
          <dt>Messages</dt>
          <dd>{fmt.int(a.messageCount)}</dd>
          <dt>Peers</dt>
          <dd>{a.peers.join(', ') || '—'}</dd>
          <dt>Accepts</dt>
          <dd>
            <code>{(a.payloadClasses ?? [a.payloadClass]).join(' | ')}</code>
          </dd>
        </dl>
        <PauseResume agent={a} />
      </Card>
      <Card title="Usage">
        {usage.data ? (
          <dl>
            <dt>LLM calls</dt>
            <dd>{fmt.int(usage.data.requestCount)}</dd>
            <dt>Tokens</dt>
            <dd>
              {fmt.int(usage.data.totalTokens)} ({fmt.int(usage.data.promptTokens)} in, {fmt.int(usage.data.completionTokens)} out)
            </dd>
            <dt>Cost</dt>
            <dd>{fmt.usd(usage.data.totalCost)}</dd>
          </dl>
        ) : (
          <ErrorBox error={usage.error} />
        )}
      </Card>
      {operator && cap.data ? (
        <AgentCalls cap={cap.data} />
      ) : (
        <Card title="Payload schema" className="span-2">
          {operator ? <ErrorBox error={cap.error} /> : xsd.data ? <pre className="json">{xsd.data.schema}</pre> : <ErrorBox error={xsd.error} />}
        </Card>
      )}
      {a.isAgent && (
        <Card title="LLM call inspector" className="span-all">
          <AgentLlmCalls name={a.name} />
        </Card>
      )}
      <Card title="Recent messages" className="span-all">
        <table>
          <thead>
            <tr>
              <th>Time</th>
              <th>From</th>
              <th>To</th>
              <th>Type</th>
              <th>State</th>
              <th>Thread</th>
            </tr>
          </thead>
          <tbody>
            {(recent.data?.messages ?? []).map((m) => (
              <tr key={m.id}>
                <td>{fmt.time(m.timestamp)}</td>
                <td>{m.from}</td>
                <td>{m.to}</td>
                <td>{m.payloadType}</td>
                <td>
                  <StateBadge state={m.deliveryState} />
                </td>
                <td>
                  <ThreadLink id={m.threadId} short />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
    </div>
  );
}

const FORM: Record<string, string> = { tools: 'tool call', xml: 'XML', code: 'code tool' };

/**
 * How the listener is really reached and how it answers (operators: the capability route): the
 * tool call an LLM agent sends it, XML only where a sender writes XML, its system prompt, and
 * the tools it answers with.
 */
function AgentCalls({ cap }: { cap: Capability }) {
  const senders = cap.senders ?? [];
  const xmlSenders = senders.filter((s) => s.form === 'xml');
  return (
    <>
      {cap.isAgent && (
        <Card title="System prompt" className="span-2">
          {cap.prompt ? <pre className="prompt">{cap.prompt}</pre> : <p className="muted">No prompt configured.</p>}
          <p className="muted">As organism.yaml sets it; each LLM call adds the peers and tools of that delivery (the thread page shows every call as sent).</p>
        </Card>
      )}
      {cap.isAgent && (
        <Card title="Answers with" className="span-2">
          {cap.replyFormat === 'xml' ? (
            <p>
              XML: <code>&lt;send to="peer"&gt;</code> blocks in its answer text (<code>reply_format: xml</code>).
            </p>
          ) : (
            <>
              <p>Tool calls, one tool per peer, plus reply:</p>
              <ul className="tools">
                {(cap.tools ?? []).map((t) => (
                  <li key={t}>
                    <code>{t}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
        </Card>
      )}
      <Card title="How it is called" className="span-all">
        <p>
          Accepts{' '}
          {(cap.payloadTypes?.map((t) => t.name) ?? [cap.payloadClass]).map((t, i) => (
            <span key={t}>
              {i > 0 && ' or '}
              <code>{t}</code>
            </span>
          ))}
          .{' '}
          {senders.length === 0 ? (
            <span className="muted">No listener has it as a peer: it is reached by inject (POST /inject).</span>
          ) : (
            <>
              Sent to by{' '}
              {senders.map((s, i) => (
                <span key={s.name}>
                  {i > 0 ? ', ' : ''}
                  <Link to="/agents/$name" params={{ name: s.name }}>
                    {s.name}
                  </Link>{' '}
                  ({FORM[s.form] ?? s.form})
                </span>
              ))}
              .
            </>
          )}
        </p>
        {cap.toolCall && (
          <>
            <h3>As a tool call</h3>
            <pre className="json">
              {cap.toolCall.name}({JSON.stringify(cap.toolCall.arguments, null, 2)})
            </pre>
          </>
        )}
        {xmlSenders.length > 0 && (
          <>
            <h3>As XML (from {xmlSenders.map((s) => s.name).join(', ')})</h3>
            <pre className="json">{`<send to="${cap.name}">${cap.exampleXml}</send>`}</pre>
          </>
        )}
        <details>
          <summary>JSON Schema</summary>
          <Json value={cap.jsonSchema} />
        </details>
      </Card>
    </>
  );
}
