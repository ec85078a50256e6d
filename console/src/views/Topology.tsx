import dagre from '@dagrejs/dagre';
import { useNavigate } from '@tanstack/react-router';
import { useMemo } from 'react';
import { useLive, type EdgeStats } from '../live';
import { useTick } from '../tick';

const NODE_W = 150;
const NODE_H = 48;

interface LaidEdge {
  from: string;
  to: string;
  points: Array<{ x: number; y: number }>;
  declared: boolean;
  stats: EdgeStats | undefined;
}

/**
 * The peer graph: listeners as nodes (agents rounded, code tools square), declared peers as
 * edges labelled with their live message count and rate, denied sends as dashed red edges,
 * senders outside the organism (the API, demo traffic) as dotted source nodes.
 */
export function TopologyView() {
  const live = useLive();
  useTick(2000);
  const navigate = useNavigate();
  const agents = [...live.agents.values()];
  const edgeList = [...live.edges.values()];
  const shape = agents.map((a) => `${a.name}:${a.peers.join(',')}`).join(';') + '|' + edgeList.map((e) => `${e.from}>${e.to}`).join(';');

  // biome-ignore lint/correctness/useExhaustiveDependencies: laid out again only when the graph's shape changes, not on every live update.
  const layout = useMemo(() => {
    const g = new dagre.graphlib.Graph({ multigraph: false });
    g.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 90, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(() => ({}));
    const names = new Set(agents.map((a) => a.name));
    for (const a of agents) g.setNode(a.name, { width: NODE_W, height: NODE_H });
    for (const e of edgeList) for (const n of [e.from, e.to]) if (!names.has(n) && !g.hasNode(n)) g.setNode(n, { width: NODE_W, height: NODE_H });
    const declared = new Set<string>();
    for (const a of agents)
      for (const p of a.peers) {
        declared.add(`${a.name}>${p}`);
        if (!g.hasNode(p)) g.setNode(p, { width: NODE_W, height: NODE_H });
        g.setEdge(a.name, p, { label: '' });
      }
    for (const e of edgeList) if (!g.hasEdge(e.from, e.to)) g.setEdge(e.from, e.to, {});
    dagre.layout(g);
    const nodes = g.nodes().map((n) => ({ name: n, ...(g.node(n) as { x: number; y: number }) }));
    const edges = g.edges().map((e) => ({ from: e.v, to: e.w, points: (g.edge(e) as { points: Array<{ x: number; y: number }> }).points, declared: declared.has(`${e.v}>${e.w}`) }));
    const { width = 400, height = 200 } = g.graph() as { width?: number; height?: number };
    return { nodes, edges, width, height };
  }, [shape]);

  const edges: LaidEdge[] = layout.edges.map((e) => ({ ...e, stats: live.edges.get(`${e.from}\u0000${e.to}`) }));
  const path = (pts: Array<{ x: number; y: number }>) => pts.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');

  if (layout.nodes.length === 0)
    return (
      <div>
        <h1>Topology</h1>
        <p className="muted">Waiting for the live snapshot…</p>
      </div>
    );
  return (
    <div>
      <h1>Topology</h1>
      <p className="legend">
        <span className="lg-agent">LLM agent</span> <span className="lg-tool">code tool</span> <span className="lg-external">outside sender</span>{' '}
        <span className="lg-denied">denied send</span> <span className="lg-paused">paused</span> · edge labels: messages since the server started (per minute over the last 60 s)
      </p>
      <svg className="topology" viewBox={`0 0 ${layout.width} ${layout.height}`} width={layout.width} height={layout.height} role="img" aria-label="Peer graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" className="arrowhead" />
          </marker>
        </defs>
        {edges.map((e) => {
          const denied = (e.stats?.denied ?? 0) > 0 && !e.declared;
          const mid = e.points[Math.floor(e.points.length / 2)]!;
          const count = e.stats?.count ?? 0;
          const perMin = e.stats ? e.stats.rate.mean(60) * 60 : 0;
          return (
            <g key={`${e.from}>${e.to}`} className={`edge ${denied ? 'denied' : e.declared ? 'declared' : 'external'}`} data-edge={`${e.from}->${e.to}`}>
              <path d={path(e.points)} markerEnd="url(#arrow)" />
              <text x={mid.x} y={mid.y - 6} textAnchor="middle">
                {denied ? `denied ×${e.stats?.denied}` : `${count} msg${count === 1 ? '' : 's'} · ${perMin.toFixed(0)}/min`}
              </text>
            </g>
          );
        })}
        {layout.nodes.map((n) => {
          const a = live.agents.get(n.name);
          const kind = a ? (a.isAgent ? 'agent' : 'tool') : 'external';
          const go = () => a && void navigate({ to: '/agents/$name', params: { name: n.name } });
          return (
            <g
              key={n.name}
              className={`node ${kind} ${a?.state === 'paused' ? 'paused' : ''} state-${a?.state ?? 'none'}`}
              transform={`translate(${n.x - NODE_W / 2},${n.y - NODE_H / 2})`}
              {...(a
                ? {
                    role: 'link',
                    tabIndex: 0,
                    'aria-label': `Agent ${n.name}${a.state === 'paused' ? ' (paused)' : ''}`,
                    onClick: go,
                    onKeyDown: (ev: React.KeyboardEvent) => (ev.key === 'Enter' || ev.key === ' ') && go(),
                  }
                : {})}
            >
              <rect width={NODE_W} height={NODE_H} rx={kind === 'agent' ? 18 : 3} />
              <text x={NODE_W / 2} y={20} textAnchor="middle" className="name">
                {n.name}
              </text>
              <text x={NODE_W / 2} y={37} textAnchor="middle" className="sub">
                {a ? `${a.state}${a.isAgent ? '' : ' · tool'}` : 'outside'}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
