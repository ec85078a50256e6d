export interface Page<T> {
  readonly items: readonly T[];
  readonly total: number;
  /**
   * Set when the query searched text: true when the journal holds entries older than the
   * search's window, which were not read (they may match too).
   */
  readonly searchTruncated?: boolean;
}
