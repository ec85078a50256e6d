/** Every check the chaos suite makes, by name, with what it asserts (the report lists them all). */
export const CHECKS = {
  'accepted-ended': 'every accepted message ends ACKED (or FAILED with its reason where the workload makes it fail), its thread completed (or in error where it must)',
  'journal-drained': 'once the organism is quiet nothing is left PENDING or DISPATCHED',
  'unexpected-failure': 'no delivery FAILED except where the workload makes it fail',
  'acked-not-rerun': 'no handler ran again for a delivery the journal had ACKED',
  'effects-once': 'side effects exactly once per thread (deduplicated by ctx.messageId)',
  'usage-once': 'one persisted usage event per acknowledged LLM delivery, none twice',
  'usage-totals': 'billing totals (all, per org) equal the sum of the persisted usage events',
  'thread-budget': 'no thread spent more tokens than its ceiling',
  'paused-stays-paused': 'a paused agent is still paused after a restart or crash, and ran nothing it held',
  'no-process-left': 'exactly one supervisor and one worker while serving; nothing left after a kill or the final stop',
  'worker-dies-with-supervisor': 'the worker exits within 2 s when its supervisor is SIGKILLed',
  'restart-not-refused': 'a new organism serve right after a kill starts at once (never refused, e.g. by a stale lock)',
  'no-refused-connection': 'no connection refused while the supervisor runs (restarts, worker crashes, SIGSTOP)',
  'back-in-service': 'after every fault the organism serves again within its deadline',
  'no-5xx': 'no inject answered 5xx other than 503/507',
  'clear-refusals': 'every 503/507 refusal carries Retry-After',
  'inject-answers': 'no inject answered an unexpected 4xx',
  'disk-full-answered': 'on a full disk the server keeps running and /health stops saying healthy once writes are refused',
  'hostile-reply-bounded': 'hostile LLM replies end within 60 s and /health answers within 3 s while they are parsed',
  'graceful-stop': 'SIGTERM stops the organism with exit code 0',
} as const;

export type CheckName = keyof typeof CHECKS;
