/** A promise with its settle functions, for `ToolHost.start()`. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: Error): void;
}

/** A new {@link Deferred}; its promise is marked handled (see below). */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Settling twice is a no-op; a rejection nobody awaits (start() never called… or ignored) must
  // not become an unhandled rejection, so mark it handled here — callers still see it.
  promise.catch(() => {});
  return { promise, resolve, reject };
}
