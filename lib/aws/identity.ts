// The credentials the code running now calls AWS with. On AWS every Lambda and every host has its
// own role and the SDK's default chain finds its credentials; the local runtime runs all of them in
// one process, so each component runs inside `runAs(itsIdentity, …)` and the client factories in
// clients.ts sign its calls with that identity's keys. The emulators' gateway then holds each
// caller to its role's policy, keyed on the access key id of the signed request.
import { AsyncLocalStorage } from "node:async_hooks";

export interface Identity {
  /** access key id: names the role locally (e.g. LOCALSCHEDULER000000) */
  accessKeyId: string;
  secretAccessKey: string;
}

const current = new AsyncLocalStorage<Identity>();

/** Runs `fn` (and everything it starts: timers, loops, promises) as `identity`. */
export function runAs<T>(identity: Identity, fn: () => T): T {
  return current.run(identity, fn);
}

/** The identity set by the innermost runAs, or undefined: the SDK's default chain applies. */
export function currentIdentity(): Identity | undefined {
  return current.getStore();
}

/**
 * Process-wide state (a warm Lambda's cache) kept apart per identity: on AWS each component is its
 * own function with its own memory, so locally what one component read must not serve another,
 * which might not be allowed to read it. `reset` forgets every identity's state.
 */
export function perIdentity<T>(make: () => T): { get(): T; reset(): void } {
  const states = new Map<string, T>();
  return {
    get() {
      const key = current.getStore()?.accessKeyId ?? "";
      let state = states.get(key);
      if (state === undefined) {
        state = make();
        states.set(key, state);
      }
      return state;
    },
    reset() {
      states.clear();
    },
  };
}
