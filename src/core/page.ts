export interface Page<T> {
  readonly items: readonly T[];
  readonly total: number;
}
