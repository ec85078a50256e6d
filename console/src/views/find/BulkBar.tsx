import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { fmt, Confirm, ErrorBox, OpButton } from '../../ui';

/** What a bulk route answered, whatever its action. */
export interface BulkResult {
  matched: number;
  attempted: number;
  done: number;
  skipped: Array<{ id: string; code: string; detail: string }>;
}

/** What to act on: the ids selected, or every match of the list's filter. */
export type BulkTarget = { ids: string[] } | { filter: true };

/**
 * The selection's action bar: "Kill selected (3)", or, once "select all N matching" is on,
 * "Kill all N matching"; a confirmation naming the count; then what was done and what was not,
 * a partial or failed run shown as an alert, never as a success.
 */
export function BulkBar({
  verb,
  done,
  noun,
  selected,
  matching,
  allMatching,
  canSelectAll,
  onAllMatching,
  run,
  onDone,
}: {
  /** "Kill", "Redeliver". */
  verb: string;
  /** "Killed", "Redelivered". */
  done: string;
  /** Plural: "threads", "failed entries". */
  noun: string;
  selected: ReadonlySet<string>;
  /** Matches of the filter (the list's total). */
  matching: number;
  allMatching: boolean;
  /** Whether the filter selects only what the action applies to (active threads, FAILED entries). */
  canSelectAll: boolean;
  onAllMatching: (on: boolean) => void;
  run: (target: BulkTarget) => Promise<BulkResult>;
  onDone: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<BulkResult | null>(null);
  const count = allMatching ? matching : selected.size;
  const act = useMutation({
    mutationFn: () => run(allMatching ? { filter: true } : { ids: [...selected] }),
    onSuccess: (r) => {
      setResult(r);
      onDone();
    },
  });
  const confirm = () => {
    setConfirming(false);
    setResult(null);
    act.mutate();
  };
  const label = allMatching ? `${verb} all ${fmt.int(matching)} matching` : `${verb} selected (${selected.size})`;
  return (
    <div className="toolbar bulk-bar">
      {canSelectAll && matching > 0 && (
        <label>
          <input type="checkbox" checked={allMatching} onChange={(e) => onAllMatching(e.target.checked)} />
          Select all {fmt.int(matching)} matching
        </label>
      )}
      <OpButton disabled={count === 0 || act.isPending} onClick={() => setConfirming(true)}>
        {label}
      </OpButton>
      <Confirm open={confirming} title={`${verb} ${fmt.int(count)} ${noun}?`} confirmLabel={`${verb} ${fmt.int(count)}`} onConfirm={confirm} onCancel={() => setConfirming(false)}>
        <p>
          {verb} {allMatching ? `every one of the ${fmt.int(count)} ${noun} the filter matches` : `the ${fmt.int(count)} selected ${noun}`}? This cannot be undone.
        </p>
      </Confirm>
      {result && <Summary result={result} done={done} />}
      <ErrorBox error={act.error} />
    </div>
  );
}

/** "Killed 3 of 3." as a status; anything skipped or left over as an alert listing the reasons. */
export function Summary({ result, done }: { result: BulkResult; done: string }) {
  const left = result.matched - result.attempted;
  const ok = result.skipped.length === 0 && left === 0 && result.done === result.attempted;
  const reasons = new Map<string, { detail: string; n: number }>();
  for (const s of result.skipped) {
    const r = reasons.get(s.code) ?? { detail: s.detail, n: 0 };
    r.n++;
    reasons.set(s.code, r);
  }
  const text = `${done} ${fmt.int(result.done)} of ${fmt.int(result.attempted)}.`;
  return (
    <div role={ok ? 'status' : 'alert'} className={ok ? 'notice' : 'error'}>
      {text}
      {result.skipped.length > 0 && ` Not done: ${fmt.int(result.skipped.length)}.`}
      {left > 0 && ` ${fmt.int(left)} more match: run it again for the rest.`}
      {reasons.size > 0 && (
        <ul>
          {[...reasons].map(([code, r]) => (
            <li key={code}>
              {r.n} × <code>{code}</code>: {r.n === 1 ? r.detail : `${r.detail} (and alike)`}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
