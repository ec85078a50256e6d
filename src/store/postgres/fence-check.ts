/**
 * `organism_fence_check`, the check of a lot of fenced outcomes sent whole with its COMMIT (see
 * PgClusterJournal.commitOutcomes): it raises, and so rolls the transaction back, unless every
 * outcome of the lot still held its claim and every thread the lot touches was found and
 * locked. The writer then runs the lot again with the fence first, on its own round trip, and
 * writes only what still holds its claim. A function so that the server's log says what
 * happened (SQLSTATE OR409), where a failed cast or a division by zero would not.
 */
export const PG_FENCE_CHECK_MIGRATION = `
  CREATE FUNCTION organism_fence_check(p_moved INT, p_outcomes INT, p_locked INT, p_threads INT) RETURNS VOID LANGUAGE plpgsql AS $fence$
  BEGIN
    IF p_moved <> p_outcomes OR p_locked <> p_threads THEN
      RAISE EXCEPTION 'organism: % of % outcomes still held their claim and % of % threads were found; the lot is written again, fence first', p_moved, p_outcomes, p_locked, p_threads
        USING ERRCODE = 'OR409';
    END IF;
  END
  $fence$;
`;
