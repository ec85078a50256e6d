import type { OrganismError } from '../../errors/catalogue.js';

/**
 * `target` with every method's failures (thrown or rejected) mapped to catalogue errors by
 * `map`: a SQLite error never leaves the store raw, so a damaged page read by any route is
 * STORAGE_CORRUPT, a write refused for space STORAGE_FULL, never a bare 500.
 */
export function guarded<T extends object>(target: T, map: (err: unknown) => OrganismError): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, key, receiver) {
      const value: unknown = Reflect.get(obj, key, receiver);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(key);
      if (!fn) {
        const method = value as (...args: unknown[]) => unknown;
        fn = function (this: unknown, ...args: unknown[]) {
          let result: unknown;
          try {
            result = method.apply(this, args);
          } catch (err) {
            throw map(err);
          }
          return result instanceof Promise ? result.catch((err: unknown) => Promise.reject(map(err))) : result;
        };
        wrapped.set(key, fn);
      }
      return fn;
    },
  });
}
