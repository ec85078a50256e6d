import { InboxCounts } from './inbox.js';
import { Type } from 'typebox';
import { Nullable, NullableString, NullableTimestamp, SuccessFlag, Timestamp } from './common.js';

export const OrganismStatus = Type.Enum(['starting', 'running', 'stopping', 'stopped']);

export const RecoveryReport = Type.Object(
  {
    bootId: Type.String(),
    at: Timestamp,
    durationMs: Type.Number(),
    pending: Type.Integer(),
    redelivered: Type.Integer(),
    failedMaxAttempts: Type.Integer(),
    pausedAgents: Type.Array(Type.String(), { description: 'Agents the operator had paused, paused again at this boot' }),
  },
  { title: 'RecoveryReport' },
);

export const JournalStats = Type.Object(
  {
    counts: Type.Object({
      PENDING: Type.Integer(),
      DISPATCHED: Type.Integer(),
      AWAITING: Type.Integer({ description: 'Asks waiting for a person (an extension of the spec)' }),
      ACKED: Type.Integer(),
      FAILED: Type.Integer(),
    }),
    oldestPendingAgeMs: Nullable(Type.Number()),
    lastRecovery: Nullable(RecoveryReport),
  },
  { title: 'JournalStats' },
);

export const OrganismInfo = Type.Object(
  {
    name: Type.String(),
    status: OrganismStatus,
    uptimeSeconds: Type.Number(),
    agentCount: Type.Integer({ description: 'Registered listeners (agents and tools)' }),
    activeThreads: Type.Integer({ description: 'Threads with work queued or in flight (in cluster mode, across every process)' }),
    totalMessages: Type.Integer({ description: 'Messages since this process started' }),
    version: Type.String(),
    startedAt: NullableTimestamp,
    bootId: Type.String({ description: 'New on every process start' }),
    journal: JournalStats,
    inbox: InboxCounts,
  },
  { title: 'OrganismInfo' },
);

export const OrganismConfig = Type.Object({}, { additionalProperties: true, title: 'SanitizedConfig', description: 'The organism configuration without secrets' });

export const ConfigQuery = Type.Object({
  format: Type.Optional(Type.Enum(['json', 'yaml'], { default: 'json', description: 'yaml: the sanitized configuration as organism.yaml is written (application/yaml)' })),
});

export const ReloadQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ default: false, description: 'Report the diff without applying it' })),
});

export const ReloadResponse = Type.Object(
  {
    success: Type.Boolean(),
    added: Type.Array(Type.String()),
    removed: Type.Array(Type.String()),
    updated: Type.Array(Type.String()),
    updatedFields: Type.Record(Type.String(), Type.Array(Type.String()), {
      description: 'For each updated listener, the organism.yaml keys that changed (prompt, model, peers, ...; "handler code": the code behind the same handler changed)',
    }),
    changed: Type.Array(Type.String(), { description: 'Other organism.yaml keys that changed, e.g. max_tokens_per_thread, llm.providers.mock.base_url' }),
    restartRequired: Type.Array(Type.String(), { description: 'Changed keys that take effect only after a restart (journal.*, metrics, telemetry)' }),
    error: NullableString,
    dryRun: Type.Boolean(),
  },
  { title: 'ReloadResponse' },
);

export const StopResponse = Type.Object({ success: SuccessFlag, status: Type.Literal('stopping') }, { title: 'StopResponse' });
export const RestartResponse = Type.Object({ success: SuccessFlag, status: Type.Literal('restarting') }, { title: 'RestartResponse' });

export const EdgeTrafficInfo = Type.Object(
  {
    from: Type.String({ description: 'Sender (a listener, or an outside sender such as api)' }),
    to: Type.String(),
    messages: Type.Integer({ description: 'Messages queued along this edge' }),
    denied: Type.Integer({ description: 'Sends refused: not a declared peer' }),
    lastAt: Timestamp,
  },
  { title: 'EdgeTrafficInfo' },
);

export const EdgeTrafficResponse = Type.Object({ edges: Type.Array(EdgeTrafficInfo), count: Type.Integer() }, { title: 'EdgeTrafficResponse' });
