// Small hooks: the hash route, and polling a GET with ETags.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { getFresh } from "./api.js";

export function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  reload: () => void;
}

/** GET `path` now and every `everyMs` (0: once) while mounted; null path: nothing. */
export function usePoll<T>(path: string | null, everyMs: number): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    if (!path) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const d = await getFresh<T>(path);
        if (!alive.current) return;
        setData(d);
        setError(undefined);
      } catch (e) {
        if (alive.current) setError((e as Error).message);
      }
      if (alive.current && everyMs > 0) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      alive.current = false;
      if (timer) clearTimeout(timer);
    };
  }, [path, everyMs, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}
