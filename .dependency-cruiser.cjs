/**
 * The layering of src/ (issue 24, item 8), checked by `npm run lint:deps` (part of `npm test`).
 *
 * Layers, lowest first; a module may import its own layer and the layers below, never above:
 *   0. src/errors, src/util, src/version.ts   the error catalogue and pure helpers
 *   1. src/core                                the domain's types (message, thread, journal,
 *                                              delivery, handler, storage, budget, usage, llm)
 *   2. src/config, payload, events, llm, usage, store, queue, mcp, agent
 *                                              (queue: the embedded DeliveryQueue)
 *   3. src/pump
 *   4. src/cluster                             cluster mode: claim queue, leases, bus, workers
 *   5. src/organism
 *   6. src/telemetry, src/service, src/testing telemetry observes the organism and the pump
 *                                              (metrics.ts, tracing.ts read their types);
 *                                              testing: the test kit (`organism/testing`)
 *   7. src/cli
 * Beside them: src/client (the API client) imports only core, errors and its own files;
 * console/src imports only src/client. src/index.ts (the public entry) may import anything
 * below the service.
 *
 * Exceptions, each named (the lead may remove them once the code moves):
 * - src/store/postgres/storage.ts assembles the clustered store from src/cluster (channels, cluster
 *   journal, work source, workers, the cluster queue): a store module reaching up into cluster. Fix: move the
 *   cluster assembly (openPostgresStorage's `cluster` part) into src/cluster (issue 24, item 4).
 * - src/client/types.ts derives the wire types from src/service/schemas (TypeBox schemas that
 *   import nothing but typebox), type-only. Fix: move src/service/schemas under src/client.
 * No circular import is allowed, type-only ones included.
 */
const layers = [
  ['errors', 'util', 'version'],
  ['core'],
  ['config', 'payload', 'events', 'llm', 'usage', 'store', 'queue', 'mcp', 'agent'],
  ['pump'],
  ['cluster'],
  ['organism'],
  ['telemetry', 'service', 'testing'],
  ['cli'],
];

const dir = (names) => `^src/(${names.join('|')})(/|\\.ts$)`;

const exceptions = {
  // store -> cluster: the shared PostgreSQL store's assembly (see above).
  store: '^src/store/postgres/storage\\.ts$',
};

const layerRules = layers.slice(0, -1).map((names, i) => {
  const above = layers.slice(i + 1).flat();
  return {
    name: `layer-${i}-${names.join('-')}`,
    comment: `${names.join(', ')} may not import a higher layer (${above.join(', ')})`,
    severity: 'error',
    from: { path: dir(names), ...(names.includes('store') ? { pathNot: exceptions.store } : {}) },
    to: { path: dir(above) },
  };
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No module may import itself through others (type-only circles included).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'store-to-cluster-only-the-assembly',
      comment: 'Of src/store only the shared assembly (postgres/storage.ts) may import src/cluster (named exception).',
      severity: 'error',
      from: { path: '^src/store/', pathNot: exceptions.store },
      to: { path: '^src/cluster/' },
    },
    {
      name: 'client-is-self-contained',
      comment: 'src/client imports only src/core, src/errors, its own files and (type-only) the wire schemas of src/service/schemas.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/', pathNot: '^src/(client|core|errors)/|^src/service/schemas/' },
    },
    {
      name: 'client-schemas-type-only',
      comment: 'src/client may import the wire schemas for their types only.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/service/schemas/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'console-uses-the-client',
      comment: 'console/src imports from src/ only through src/client.',
      severity: 'error',
      from: { path: '^console/src/' },
      to: { path: '^src/', pathNot: '^src/client/' },
    },
    {
      name: 'testing-runs-the-runtime',
      comment: 'src/testing (organism/testing) starts organisms in the test process: never through the service, the CLI or telemetry.',
      severity: 'error',
      from: { path: '^src/testing/' },
      to: { path: '^src/(service|cli|telemetry)/' },
    },
    {
      name: 'entry-below-service',
      comment: 'src/index.ts (the public API) exports the runtime, never the service or the CLI.',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/(service|cli)/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test|bench|chaos|examples)/' },
  },
};
