// Small hooks: the hash route, polling a GET with ETags, a load run again on demand, and a servers
// list kept by changes-since.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { getFresh, request } from "./api.js";
import { changesQuery, mergeServers, type ServerFilters, serverQuery } from "./model.js";
import type { Server } from "./types.js";

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

/**
 * `load()` now and on each `reload()`: for pages that change only when their user acts (the
 * Identity pages), read several resources together. The last data stays shown while it reloads.
 */
export function useLoad<T>(load: () => Promise<T>): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let alive = true;
    load().then(
      (d) => {
        if (!alive) return;
        setData(d);
        setError(undefined);
      },
      (e: unknown) => {
        if (alive) setError((e as Error).message);
      },
    );
    return () => {
      alive = false;
    };
  }, [tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

/**
 * How far each changes poll looks back before the last one's time: a write whose index entry
 * arrived late, or whose writer's clock was behind, is still seen (repeats are merged away).
 */
const LOOK_BACK_MS = 10_000;
/** Nova's max_limit: more changes than one page of it reloads the whole list instead. */
const CHANGES_PAGE = 1000;

interface ServerList {
  servers: Server[];
  servers_links?: unknown[];
}

/** The API's clock: its Date header, else the newest `updated` it answered, else `was`. */
function serverTime(headers: Headers, servers: readonly Server[], was?: string): string | undefined {
  const date = Date.parse(headers.get("date") ?? "");
  const times = [
    ...(Number.isNaN(date) ? [] : [new Date(date).toISOString()]),
    ...servers.map((s) => new Date(s.updated).toISOString()),
    ...(was ? [was] : []),
  ].sort();
  return times[times.length - 1];
}

/**
 * A servers list (/servers/detail with these filters, the `limit` newest) polled every `everyMs`:
 * read whole once, then only what changed (Nova's changes-since, deleted ones included) merged
 * in, so a poll's cost follows the changes, not the list. Read whole again when the filters
 * change, when deletions leave a cut list short, or when the changes overflow a page.
 */
export function useServerList(
  f: ServerFilters,
  limit: number | undefined,
  everyMs: number,
): Polled<ServerList> {
  const [data, setData] = useState<ServerList>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  // the filters by value: a caller builds a new object every render
  const key = JSON.stringify([f, limit]);
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let held: Server[] | undefined;
    // the whole list was cut at `limit`: more servers than it holds may match
    let cut = false;
    let since: string | undefined;
    const run = async () => {
      try {
        if (!held || !since || (cut && limit !== undefined && held.length < limit)) {
          const q = serverQuery(f);
          if (limit !== undefined) q.set("limit", String(limit));
          const r = await request<ServerList>("GET", `/v2.1/servers/detail?${q}`);
          held = r.body.servers;
          cut = Boolean(r.body.servers_links?.length) || (limit !== undefined && held.length >= limit);
          since = serverTime(r.headers, held);
        } else {
          const from = new Date(Date.parse(since) - LOOK_BACK_MS).toISOString();
          const q = changesQuery(f, from);
          q.set("limit", String(CHANGES_PAGE));
          const r = await request<ServerList>("GET", `/v2.1/servers/detail?${q}`);
          if (r.body.servers_links?.length) held = undefined;
          else {
            held = mergeServers(held, r.body.servers, f, limit);
            since = serverTime(r.headers, r.body.servers, since);
          }
        }
        if (alive && held) {
          setData({ servers: held });
          setError(undefined);
        }
      } catch (e) {
        if (alive) setError((e as Error).message);
      }
      if (alive && everyMs > 0) timer = setTimeout(run, held ? everyMs : 0);
    };
    void run();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
  }, [key, everyMs, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}
