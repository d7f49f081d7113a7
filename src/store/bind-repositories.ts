/**
 * Turning a dialect's repositories into the async `StoreOps` the sync code calls: each method's
 * failure normalised into the store's error, and (for the store outside a transaction) each call
 * routed to the transaction its caller runs in, if any.
 */
import type { Repositories } from "./driver.js";
import type { StoreOps } from "./store.js";

type Method = (...args: unknown[]) => unknown;
type MethodTable = Record<string, Record<string, Method>>;

/** Each method of each repository, as `wrap` makes it. */
function mapMethods(repos: object, wrap: (fn: Method, repo: string, method: string) => Method): StoreOps {
  const mapped: MethodTable = {};
  for (const [repoName, repo] of Object.entries(repos as MethodTable)) {
    const methods: Record<string, Method> = {};
    for (const [name, fn] of Object.entries(repo)) methods[name] = wrap(fn, repoName, name);
    mapped[repoName] = methods;
  }
  return mapped as unknown as StoreOps;
}

/**
 * The repositories as async methods whose failures go through `fail`. A synchronous method
 * (better-sqlite3) runs at once, as it would unwrapped: one resolved promise is all it costs.
 */
export function guardRepositories(repos: Repositories, fail: (error: unknown) => unknown): StoreOps {
  return mapMethods(repos, (fn) => (...args) => {
    let result: unknown;
    try {
      result = fn(...args);
    } catch (error) {
      return Promise.reject(fail(error));
    }
    if (!(result instanceof Promise)) return Promise.resolve(result);
    return result.catch((error: unknown) => {
      throw fail(error);
    });
  });
}

/**
 * `outside`'s methods for the store itself: a call made within a running transaction's async
 * context joins that transaction (`joined`), any other goes through `run`.
 */
export function routeRepositories(
  outside: StoreOps,
  joined: () => StoreOps | undefined,
  run: <T>(work: () => Promise<T>) => Promise<T>,
): StoreOps {
  return mapMethods(outside, (fn, repo, method) => (...args) => {
    const tx = joined() as unknown as MethodTable | undefined;
    if (tx) {
      // The same repositories over the transaction's connection: the method is there.
      const joinedRepo = tx[repo] as Record<string, Method>;
      return (joinedRepo[method] as Method)(...args);
    }
    return run(() => fn(...args) as Promise<unknown>);
  });
}
