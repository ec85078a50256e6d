/**
 * A V8 .heapsnapshot summarized by constructor, as DevTools' Summary view does: objects
 * counted, their own (self) size, and their retained size (what collecting them would free,
 * from the dominator tree; weak edges do not retain). A group's retained size counts each
 * member whose immediate dominator is outside the group, so nested members are not counted twice.
 */
export interface Group {
  count: number;
  self: number;
  retained: number;
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }; node_count: number };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const GROUP_OF_TYPE: Record<string, string> = {
  string: '(string)',
  'concatenated string': '(string)',
  'sliced string': '(string)',
  array: '(array)',
  code: '(compiled code)',
  hidden: '(system)',
  closure: '(closure)',
  regexp: '(regexp)',
  number: '(number)',
  'heap number': '(number)',
  symbol: '(symbol)',
  bigint: '(bigint)',
};

export function groupSnapshot(text: string): Map<string, Group> {
  const s = JSON.parse(text) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const NF = nf.length;
  const [T, N, SIZE, EC] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number, number];
  const ef = s.snapshot.meta.edge_fields;
  const EF = ef.length;
  const [ET, TO] = ['type', 'to_node'].map((f) => ef.indexOf(f)) as [number, number];
  const nodeTypes = s.snapshot.meta.node_types[0];
  const weak = s.snapshot.meta.edge_types[0].indexOf('weak');
  const n = s.nodes.length / NF;

  // Successors (strong edges) as CSR arrays.
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += s.nodes[i * NF + EC]! * EF;
    firstEdge[i + 1] = e;
  }
  // Reverse postorder from the root (node 0), iteratively.
  const order = new Int32Array(n).fill(-1);
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(n);
  order[0] = 0;
  for (let i = 0; i < n; i++) cursor[i] = firstEdge[i]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    if (cursor[v]! < firstEdge[v + 1]!) {
      const e = cursor[v]!;
      cursor[v] = e + EF;
      if (s.edges[e + ET] === weak) continue;
      const w = s.edges[e + TO]! / NF;
      if (order[w] === -1) {
        order[w] = 0;
        stack.push(w);
      }
    } else {
      stack.pop();
      post.push(v);
    }
  }
  const rpo = post.reverse();
  const index = new Int32Array(n).fill(-1);
  rpo.forEach((v, i) => void (index[v] = i));
  // Predecessors of reachable nodes.
  const preds: number[][] = Array.from({ length: n }, () => []);
  for (const v of rpo) {
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      if (s.edges[e + ET] === weak) continue;
      preds[s.edges[e + TO]! / NF]!.push(v);
    }
  }
  // Cooper, Harvey and Kennedy's iterative dominators, on RPO indices.
  const idom = new Int32Array(rpo.length).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (a > b) a = idom[a]!;
      while (b > a) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = 1; i < rpo.length; i++) {
      let d = -1;
      for (const p of preds[rpo[i]!]!) {
        const pi = index[p]!;
        if (idom[pi] === -1) continue;
        d = d === -1 ? pi : intersect(pi, d);
      }
      if (d !== -1 && idom[i] !== d) {
        idom[i] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(rpo.length);
  for (let i = 0; i < rpo.length; i++) retained[i] = s.nodes[rpo[i]! * NF + SIZE]!;
  for (let i = rpo.length - 1; i > 0; i--) retained[idom[i]!] = retained[idom[i]!]! + retained[i]!;

  const keyOf = (v: number) => {
    const type = nodeTypes[s.nodes[v * NF + T]!]!;
    return GROUP_OF_TYPE[type] ?? (type === 'object' || type === 'native' ? s.strings[s.nodes[v * NF + N]!]! : `(${type})`);
  };
  const groups = new Map<string, Group>();
  for (let i = 1; i < rpo.length; i++) {
    const v = rpo[i]!;
    const key = keyOf(v);
    const g = groups.get(key) ?? { count: 0, self: 0, retained: 0 };
    g.count++;
    g.self += s.nodes[v * NF + SIZE]!;
    if (keyOf(rpo[idom[i]!]!) !== key) g.retained += retained[i]!;
    groups.set(key, g);
  }
  return groups;
}
