import type { LlmRecordMode } from '../config/types.js';
import type { Journal } from '../core/journal.js';
import type { Message } from '../core/message.js';
import type { LlmCallStore } from '../core/storage.js';
import type { ThreadRecord } from '../core/thread.js';
import { Errors } from '../errors/catalogue.js';
import type { InjectOptions } from '../pump/pump.js';
import { newId } from '../util/ids.js';
import { FORK_CONFIG, FORK_CONFIG_HASH } from './fork-configs.js';
import { answerable, FORK_MODE, FORKED_FROM_MESSAGE, FORKED_FROM_THREAD, MAX_REPLAYED_CALLS } from './fork-replay.js';

/** The most messages of a source thread a fork copies (its history before atMessageId). */
export const MAX_FORK_HISTORY = 10_000;

export interface ForkOptions {
  /** The message the fork runs on from (default: the source's first); the messages before it are copied as delivered. */
  readonly atMessageId?: string;
  /** Check and answer what the fork would be, creating nothing. */
  readonly dryRun?: boolean;
  /**
   * The organism.yaml the fork runs under (checked like a reload; only the fork uses it; the
   * running organism is unchanged). Relative: to the running organism.yaml's directory, which
   * it must lie in. Omitted: the running configuration.
   */
  readonly configPath?: string;
}

/** The organism.yaml a fork runs under, and how it differs from the running one. */
export interface ForkConfigInfo {
  /** Its absolute path. */
  readonly path: string;
  /** Its fingerprint when the fork was made. */
  readonly hash: string;
  /** Listeners whose configuration or handler differ from the running ones. */
  readonly updated: readonly string[];
  /** Listeners the fork runs without (messages to them are refused in the fork). */
  readonly removed: readonly string[];
  /** Organism-wide keys that differ (limits, llm, payloads...). */
  readonly changed: readonly string[];
}

/** How a fork's LLM calls are answered: from the source's record while requests match, or live from the first. */
export type ForkReplayMode = 'record' | 'live';

export interface ForkResult {
  /** The new thread (null for a dry run). */
  readonly threadId: string | null;
  readonly forkedFrom: { readonly threadId: string; readonly messageId: string };
  readonly replay: ForkReplayMode;
  /** Why the fork runs live (replay `live`). */
  readonly liveReason: string | null;
  /** Messages copied as the fork's history (those before atMessageId). */
  readonly history: number;
  readonly dryRun: boolean;
  /** The organism.yaml the fork runs under (null: the running one). */
  readonly config: ForkConfigInfo | null;
}

/** Where a thread was forked from, as its metadata says (null: not a fork). */
export function forkedFromOf(metadata: Readonly<Record<string, string>>): { threadId: string; messageId: string } | null {
  const threadId = metadata[FORKED_FROM_THREAD];
  const messageId = metadata[FORKED_FROM_MESSAGE];
  return threadId !== undefined && messageId !== undefined ? { threadId, messageId } : null;
}

export interface ForkDeps {
  readonly journal: Pick<Journal, 'list'>;
  readonly llmCalls: LlmCallStore;
  readonly thread: (id: string) => Promise<ThreadRecord | null>;
  readonly isListener: (name: string) => boolean;
  readonly recordMode: LlmRecordMode;
  readonly inject: (to: string, body: unknown, options: InjectOptions) => Promise<{ threadId: string; messageId: string }>;
  /** Reads and checks the organism.yaml of `configPath` for a fork that runs on from `at`. */
  readonly forkConfig: (configPath: string, at: Message) => Promise<ForkConfigInfo>;
}

/**
 * Forks a thread (issue 29): a new thread whose history is the source's messages before
 * `atMessageId` (journaled as delivered, new ids, the same payloads in the same order), then
 * `atMessageId` itself delivered again, from its original sender, and on from there. The
 * source is only read. The fork's metadata names its source, by which its LLM calls are
 * answered from the source's record while their requests match (fork-replay.ts).
 */
export async function forkThread(deps: ForkDeps, sourceId: string, options: ForkOptions = {}): Promise<ForkResult> {
  const source = await deps.thread(sourceId);
  if (!source) throw Errors.THREAD_NOT_FOUND(sourceId);
  const entries = (await deps.journal.list({ threadId: sourceId, limit: MAX_FORK_HISTORY, offset: 0, order: 'oldest' })).items;
  if (entries.length === 0) throw Errors.FORK_THREAD_EMPTY(sourceId);
  const atId = options.atMessageId ?? entries[0]!.message.id;
  const index = entries.findIndex((e) => e.message.id === atId);
  if (index < 0) throw Errors.FORK_MESSAGE_NOT_IN_THREAD(atId, sourceId);
  const at = entries[index]!.message;
  if (!deps.isListener(at.to)) throw Errors.FORK_MESSAGE_NOT_DELIVERABLE(atId, at.to);

  const config = options.configPath === undefined ? null : await deps.forkConfig(options.configPath, at);
  const { replay, liveReason } = await replayModeOf(deps, sourceId);
  const forkedFrom = { threadId: sourceId, messageId: atId };
  const base = { forkedFrom, replay, liveReason, history: index, config };
  if (options.dryRun) return { ...base, threadId: null, dryRun: true };

  const threadId = newId();
  const metadata: Record<string, string> = {
    ...withoutForkKeys(source.metadata),
    [FORKED_FROM_THREAD]: sourceId,
    [FORKED_FROM_MESSAGE]: atId,
    ...(replay === 'live' ? { [FORK_MODE]: 'live' } : {}),
    ...(config ? { [FORK_CONFIG]: config.path, [FORK_CONFIG_HASH]: config.hash } : {}),
  };
  // New ids for the copies, in order (time-sortable: older than the message the fork runs on from).
  const ids = new Map<string, string>();
  const history: Message[] = entries.slice(0, index).map(({ message: m }) => {
    const id = newId();
    ids.set(m.id, id);
    return { ...m, id, threadId, parentId: m.parentId === null ? null : (ids.get(m.parentId) ?? null), metadata, attempt: 1, traceContext: null };
  });
  const injected = await deps.inject(
    at.to,
    { [at.payloadType]: at.payload },
    {
      threadId,
      metadata,
      from: at.from,
      parentId: at.parentId === null ? null : (ids.get(at.parentId) ?? null),
      hops: at.hops,
      history,
    },
  );
  return { ...base, threadId: injected.threadId, dryRun: false };
}

/** `live` when the source's answers were not recorded (llm.record: metadata or off). */
async function replayModeOf(deps: ForkDeps, sourceId: string): Promise<{ replay: ForkReplayMode; liveReason: string | null }> {
  const recorded = await deps.llmCalls.forThread(sourceId, { limit: MAX_REPLAYED_CALLS, offset: 0 });
  const succeeded = recorded.calls.filter((c) => c.error === null);
  if (succeeded.some((c) => !answerable(c))) {
    return {
      replay: 'live',
      liveReason: `the LLM calls of thread ${sourceId} were recorded without their answers or request hashes (llm.record: metadata, or recorded before time travel): the fork calls providers from its first LLM call`,
    };
  }
  if (succeeded.length === 0 && deps.recordMode === 'off') {
    return { replay: 'live', liveReason: 'llm.record is off: no LLM call was recorded to replay, the fork calls providers from its first LLM call' };
  }
  return { replay: 'record', liveReason: null };
}

function withoutForkKeys(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const { [FORKED_FROM_THREAD]: _t, [FORKED_FROM_MESSAGE]: _m, [FORK_MODE]: _r, [FORK_CONFIG]: _c, [FORK_CONFIG_HASH]: _h, ...rest } = metadata;
  return rest;
}
