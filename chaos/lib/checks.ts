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
  'no-process-left':
    "exactly the expected processes while serving (SQLite: one supervisor and its server process; cluster mode: serve's supervisor and server process, two organism workers); nothing left after a kill or the final stop",
  'worker-dies-with-supervisor': 'the server process exits within 2 s when its supervisor is SIGKILLed',
  'restart-not-refused': 'a new organism serve right after a kill starts at once (never refused, e.g. by a stale lock)',
  'no-refused-connection': 'no connection refused while the supervisor runs (restarts, server process crashes, SIGSTOP)',
  'back-in-service': 'after every fault the organism serves again within its deadline',
  'no-5xx': 'no inject answered 5xx other than 503/507',
  'clear-refusals': 'every 503/507 refusal carries Retry-After',
  'inject-answers': 'no inject answered an unexpected 4xx',
  'disk-full-answered': 'on a full disk the server keeps running and /health stops saying healthy once writes are refused',
  'hostile-reply-bounded': 'hostile LLM replies end within 60 s and /health answers within 3 s while they are parsed',
  'text-kept-or-refused':
    "text every store must treat alike: a NUL or a lone surrogate in a payload string, a metadata value or a key is refused 422 naming the field; RTL marks and 4-byte characters in payload strings and metadata values are accepted and read back unchanged (the root entry, the next hop, every entry's metadata)",
  'claimed-once': 'no delivery ran twice with the same attempt (two processes claimed it at once)',
  'rerun-only-after-kill': 'a delivery ran again only after the process running it was SIGKILLed or SIGSTOPped past its lease',
  'attempts-increase': "a delivery's runs have increasing attempts",
  'thread-fifo': 'messages injected one after another into one thread run in that order, one at a time, whichever worker runs them',
  'workers-ride-out': 'an organism worker and serve survive a PostgreSQL restart (idle or busy) and a SIGSTOP past the lease, and work goes on after',
  'config-mismatch-refused': 'a worker started with another organism.yaml exits (code 3) naming the difference, and is never listed alive',
  'graceful-stop': 'SIGTERM stops the organism with exit code 0',
  'never-held':
    "the loop breaker (loop_guard at its defaults) holds none of the workload's threads: their traffic is legitimate (distinct payloads; budget ping-pongs end by their budget first); a held thread is reported with the rule and evidence, then resumed",
  'asks-closed-once':
    'every ask to the human listener (desk) was listed in the inbox and closed exactly once as the harness decided (answered: ACKED with one message on to ledger, delivered; rejected: FAILED rejected), none left AWAITING, no second 200 (a 409 only after a lost outcome); sampled while faults run: no thread waiting without an open ask, no open ask whose thread is not waiting',
} as const;

export type CheckName = keyof typeof CHECKS;

const CLUSTER_ONLY: readonly CheckName[] = ['claimed-once', 'rerun-only-after-kill', 'attempts-increase', 'thread-fifo', 'workers-ride-out', 'config-mismatch-refused'];
const SQLITE_ONLY: readonly CheckName[] = ['worker-dies-with-supervisor', 'disk-full-answered', 'hostile-reply-bounded'];

/** The checks a run on this store makes (the report lists exactly these). */
export function checksOf(store: 'sqlite' | 'postgres'): CheckName[] {
  const skip = store === 'sqlite' ? CLUSTER_ONLY : SQLITE_ONLY;
  return (Object.keys(CHECKS) as CheckName[]).filter((k) => !skip.includes(k));
}
