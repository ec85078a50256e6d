/**
 * `organism_check`, the check of a lot written whole with its COMMIT on what it would otherwise
 * have read first (PgClusterJournal: a lot of fenced outcomes, a lot of injects under
 * limits.max_queue): it raises unless `p_ok`, and so rolls the transaction back; the writer then
 * runs the lot again the careful way, reading first on a round trip of its own. A function so
 * that the server's log says what happened (SQLSTATE OR409, with `p_what`), where a failed cast
 * or a division by zero would not.
 */
export const PG_LOT_CHECK_MIGRATION = `
  CREATE FUNCTION organism_check(p_ok BOOLEAN, p_what TEXT) RETURNS VOID LANGUAGE plpgsql AS $check$
  BEGIN
    IF NOT p_ok THEN
      RAISE EXCEPTION 'organism: %; the lot is written again, reading first', p_what USING ERRCODE = 'OR409';
    END IF;
  END
  $check$;
`;
