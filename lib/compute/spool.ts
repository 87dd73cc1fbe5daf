// The host's report spool. Reports travel over HTTPS to compute-events' function URL, not through
// a queue, so the host is where a report must not be lost (as the ECS agent keeps its state file):
// each report that answers a cast is kept here before the cast is deleted from the host's queue,
// then sent until compute-events applies it (2xx) or refuses it (a 4xx other than 429: malformed,
// or a host speaking for another; a fenced report is applied as a no-op and answered 200). The
// store outlives the agent (a directory on disk, or the local simulator's memory standing for it),
// so a restarted agent resends what its predecessor had not delivered, after an outage of any
// length. Reports of one instance go in the order they were spooled; instances go in parallel.
import { setMaxListeners } from "node:events";
import { mkdir, open, readdir, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { FunctionUrlError } from "../aws/function-url.js";
import type { Logger } from "../log.js";

/** One report kept until it is settled. */
export interface SpooledReport {
  /** the order of spooling, across incarnations (a later report has a greater one) */
  seq: number;
  /** the lane: reports of one key (an instance) are delivered in `seq` order */
  key: string;
  /** the report as posted (JSON) */
  body: string;
  /** when it was spooled (ms since the epoch) */
  spooledAt: number;
}

/** Where reports wait; it outlives the agent incarnations that spool into it. */
export interface SpoolStore {
  /** every kept report, in `seq` order */
  load(): Promise<SpooledReport[]>;
  /** kept durably when this resolves */
  put(report: SpooledReport): Promise<void>;
  remove(report: SpooledReport): Promise<void>;
}

/**
 * The local fleet simulator's spool: it stands for the host's disk, so it is held beside the
 * driver and outlives the agent (a restarted agent's memory is lost, its spool is not).
 */
export class MemorySpoolStore implements SpoolStore {
  private kept: Map<number, SpooledReport> | undefined;

  async load(): Promise<SpooledReport[]> {
    return [...(this.kept?.values() ?? [])].sort((a, b) => a.seq - b.seq);
  }

  async put(report: SpooledReport): Promise<void> {
    this.kept ??= new Map();
    this.kept.set(report.seq, report);
  }

  async remove(report: SpooledReport): Promise<void> {
    this.kept?.delete(report.seq);
  }

  get size(): number {
    return this.kept?.size ?? 0;
  }
}

/** A spooled file's name: its seq, zero-padded so that names sort as seqs do. */
const FILE = /^(\d{16})\.json$/;
const fileOf = (seq: number) => `${String(seq).padStart(16, "0")}.json`;

/**
 * The agent's spool on disk (the unit's StateDirectory): one file per report, written whole
 * before it is named (write a temporary file, fsync it, rename it, fsync the directory), so a
 * crash leaves either the whole report or none; the cast of a report that is not there yet was
 * not deleted either, and SQS hands it out again.
 */
export class DiskSpoolStore implements SpoolStore {
  private made = false;

  constructor(
    readonly dir: string,
    private readonly log?: Logger,
  ) {}

  async load(): Promise<SpooledReport[]> {
    await this.ensureDir();
    const names = (await readdir(this.dir)).sort();
    const out: SpooledReport[] = [];
    for (const name of names) {
      // a write a crash cut short: its cast was not deleted, so it comes back
      if (name.endsWith(".tmp")) {
        await unlink(join(this.dir, name)).catch(() => undefined);
        continue;
      }
      if (!FILE.test(name)) continue;
      const text = await readFile(join(this.dir, name), "utf8");
      try {
        const r = JSON.parse(text) as SpooledReport;
        if (typeof r.body !== "string" || typeof r.key !== "string") throw new Error("not a spooled report");
        out.push({ ...r, seq: Number(FILE.exec(name)![1]) });
      } catch (e) {
        // kept aside for the operator, not sent and not lost
        await rename(join(this.dir, name), join(this.dir, `${name}.unreadable`));
        this.log?.error("compute.spool_file_unreadable", { file: name, error: e });
      }
    }
    return out;
  }

  async put(report: SpooledReport): Promise<void> {
    await this.ensureDir();
    const name = fileOf(report.seq);
    const tmp = join(this.dir, `${name}.tmp`);
    const f = await open(tmp, "w");
    try {
      await f.writeFile(JSON.stringify(report));
      await f.sync();
    } finally {
      await f.close();
    }
    await rename(tmp, join(this.dir, name));
    // the rename itself is durable only once the directory is
    const d = await open(this.dir, "r");
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }

  async remove(report: SpooledReport): Promise<void> {
    // a removal a crash loses only sends the report again, which changes nothing
    await unlink(join(this.dir, fileOf(report.seq))).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "ENOENT") throw e;
    });
  }

  private async ensureDir(): Promise<void> {
    if (this.made) return;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    this.made = true;
  }
}

/** Posts one report once; throws FunctionUrlError for an answer that is not 2xx, anything else for the network. */
export type DeliverReport = (body: string, signal: AbortSignal) => Promise<void>;

export interface SpoolOptions {
  /** the first retry's ceiling (ms); each doubles to maxDelayMs */
  baseDelayMs?: number;
  /**
   * The longest wait between two tries (ms): short enough that delivery resumes within seconds
   * of the end of an outage, long enough that a fleet retrying does not feed the storm.
   */
  maxDelayMs?: number;
  /** reports (of different instances) in flight at once */
  maxInFlight?: number;
  /**
   * A report that has waited this long is logged (once), and its delivery then: a burst of
   * throttling, compute-events' storm control, passes without a line per report.
   */
  warnAfterMs?: number;
  random?: () => number;
}

const DEFAULTS = { baseDelayMs: 100, maxDelayMs: 10_000, maxInFlight: 16, warnAfterMs: 10_000 } as const;

/** Full jitter (as the SDK's retries): a wait up to the capped exponential ceiling. */
export function backoffMs(failures: number, baseMs: number, capMs: number, random = Math.random): number {
  return random() * Math.min(capMs, baseMs * 2 ** Math.max(0, failures - 1));
}

/**
 * How an answer is taken: applied (2xx); refused for good (compute-events' 400, the report
 * malformed or another host's, or Lambda's 413, too large: sending it again would earn it
 * again); or to be tried again, by this report alone (the function failed, 5xx other than 503;
 * or Lambda throttled it, 429: compute-events' reserved concurrency is the storm control, and a
 * burst passes as each report backs off) or by the whole host, since every report would meet the
 * same: compute-events is unavailable (503), the host's credentials are refused (403: expired or
 * not yet valid, Lambda's answer before compute-events saw the report), or the network failed.
 */
function outcomeOf(e: unknown): "applied" | "refused" | "retry" | "pause" {
  if (e === undefined) return "applied";
  if (!(e instanceof FunctionUrlError)) return "pause";
  if (e.status === 503 || e.status === 403) return "pause";
  if (e.status === 429 || e.status >= 500) return "retry";
  return "refused";
}

interface Pending {
  report: SpooledReport;
  /** resolves once the report is kept (absent: read back from the store) */
  kept?: Promise<void>;
  /** true once applied, false when refused or left for the next incarnation */
  settle?: (applied: boolean) => void;
}

interface Lane {
  queue: Pending[];
  running: boolean;
  failures: number;
  /** its head's wait was logged (its delivery is logged too) */
  warned: boolean;
}

/** What a heartbeat says of the spool. */
export interface SpoolState {
  depth: number;
  /** seconds since the oldest waiting report was spooled (0 when none waits) */
  oldestAgeSeconds: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(t);
      reject(signal.reason);
    }
    signal.addEventListener("abort", aborted, { once: true });
  });

/**
 * One agent incarnation's sender over a store: it spools, sends at once (no poll tick on the fast
 * path), and keeps sending with capped backoff and no limit on tries until each report is
 * settled. A stop leaves what is unsent in the store for the next incarnation.
 */
export class ReportSpool {
  private readonly lanes = new Map<string, Lane>();
  private readonly opts: Required<Omit<SpoolOptions, "random">> & { random: () => number };
  private seq = 0;
  private depthNow = 0;
  private running = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private inFlight = 0;
  private waiting: (() => void)[] = [];
  private idle: (() => void)[] = [];
  /** consecutive host-wide failures (unavailable, credentials refused, the network) and their pause */
  private hostFailures = 0;
  private pausedUntil = 0;
  private readonly runs = new Set<Promise<void>>();
  private readonly sending = new Set<AbortController>();

  constructor(
    private readonly store: SpoolStore,
    private readonly deliver: DeliverReport,
    private readonly log: Logger,
    opts: SpoolOptions = {},
  ) {
    this.opts = { ...DEFAULTS, random: Math.random, ...opts };
    // Every lane (one per instance with reports waiting) backs off on this one signal, so that a
    // stop ends them all: more than Node's 10 listeners is the spool working, not a leak.
    setMaxListeners(0, this.abort.signal);
  }

  /** Reads back what earlier incarnations left, in order, and starts sending. */
  async start(): Promise<void> {
    const kept = await this.kept();
    const spooledBefore = this.depthNow > 0;
    for (const report of kept) this.enqueue({ report });
    // a report spooled before the start (a guest's lifecycle event) goes after those earlier
    // incarnations left (its seq is greater: it was taken after they were read)
    if (spooledBefore)
      for (const lane of this.lanes.values()) lane.queue.sort((a, b) => a.report.seq - b.report.seq);
    this.running = true;
    if (kept.length > 0)
      this.log.info("compute.spool_resumed", { reports: kept.length, ...this.ageFields() });
    for (const key of this.lanes.keys()) this.kick(key);
  }

  /**
   * Keeps `body` durably under `key` (an instance), then sends it after the reports of that key
   * spooled before it. Resolves once kept; `delivered` tells whether it was applied (false when
   * refused, or left to the next incarnation).
   */
  async add(key: string, body: string): Promise<{ delivered: Promise<boolean> }> {
    // after what earlier incarnations left, whatever the clock says: a seq names the report
    await this.kept();
    this.seq = Math.max(this.seq + 1, Date.now() * 1000);
    const report: SpooledReport = { seq: this.seq, key, body, spooledAt: Date.now() };
    let settle!: (applied: boolean) => void;
    const delivered = new Promise<boolean>((r) => {
      settle = r;
    });
    // in its lane now, in the order of the calls (writes may end in another order); it is sent
    // only once it is kept
    const kept = this.store.put(report);
    this.enqueue({ report, kept, settle });
    this.kick(key);
    await kept;
    return { delivered };
  }

  private loaded: Promise<SpooledReport[]> | undefined;

  /** What earlier incarnations left (read once); the seqs go on from theirs. */
  private async kept(): Promise<SpooledReport[]> {
    this.loaded ??= this.store.load().then((kept) => {
      for (const r of kept) this.seq = Math.max(this.seq, r.seq);
      return kept;
    });
    return this.loaded;
  }

  get state(): SpoolState {
    let oldest = Number.POSITIVE_INFINITY;
    for (const lane of this.lanes.values())
      if (lane.queue[0]) oldest = Math.min(oldest, lane.queue[0].report.spooledAt);
    return {
      depth: this.depthNow,
      oldestAgeSeconds: Number.isFinite(oldest) ? Math.max(0, Math.round((Date.now() - oldest) / 1000)) : 0,
    };
  }

  /**
   * Stops sending, after letting the spool empty for at most `flushMs` (a stopping host's last
   * reports, say the builds it handed back, go now when compute-events answers); what is left
   * stays in the store for the next start. Never waits on compute-events longer than that.
   */
  async stop(flushMs = 0): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (flushMs > 0 && this.depthNow > 0 && this.running) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((r) => this.idle.push(r)),
        new Promise<void>((r) => {
          timer = setTimeout(r, flushMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.running = false;
    const stopped = new Error("the agent stopped: the spool keeps what is unsent");
    this.abort.abort(stopped);
    for (const s of this.sending) s.abort(stopped);
    this.wake();
    await Promise.allSettled([...this.runs]);
    for (const lane of this.lanes.values()) for (const p of lane.queue) p.settle?.(false);
    if (this.depthNow > 0)
      this.log.info("compute.spool_kept", { reports: this.depthNow, ...this.ageFields() });
  }

  private ageFields() {
    const s = this.state;
    return { oldest_age_s: s.oldestAgeSeconds };
  }

  private enqueue(p: Pending): void {
    let lane = this.lanes.get(p.report.key);
    if (!lane) {
      lane = { queue: [], running: false, failures: 0, warned: false };
      this.lanes.set(p.report.key, lane);
    }
    lane.queue.push(p);
    this.depthNow++;
  }

  private kick(key: string): void {
    const lane = this.lanes.get(key);
    if (!lane || lane.running || !this.running) return;
    lane.running = true;
    const run = this.run(key, lane).finally(() => {
      this.runs.delete(run);
      lane.running = false;
      if (lane.queue.length === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
      // a report added while this run was ending
      else if (this.running) this.kick(key);
    });
    this.runs.add(run);
  }

  /** Sends a lane's reports one after the other until it is empty or the spool stops. */
  private async run(key: string, lane: Lane): Promise<void> {
    const signal = this.abort.signal;
    while (this.running && lane.queue.length > 0) {
      const head = lane.queue[0]!;
      try {
        await head.kept;
      } catch {
        // not kept: its cast stays on the queue (add threw), and comes back to be reported again
        lane.queue.shift();
        this.settled(head, false);
        continue;
      }
      try {
        await this.slot(signal);
      } catch {
        return;
      }
      let error: unknown;
      // a controller of its own: the POST's timeout composes with it, and a long-lived signal
      // would gather a listener per POST
      const sending = new AbortController();
      this.sending.add(sending);
      try {
        await this.deliver(head.report.body, sending.signal);
      } catch (e) {
        error = e;
      } finally {
        this.sending.delete(sending);
        this.release();
      }
      if (signal.aborted && error !== undefined) return;
      const outcome = outcomeOf(error);
      if (outcome === "retry" || outcome === "pause") {
        lane.failures++;
        if (!lane.warned && Date.now() - head.report.spooledAt >= this.opts.warnAfterMs) {
          lane.warned = true;
          this.log.warn("compute.report_waiting", {
            key,
            kind: kindOf(head.report.body),
            error,
            depth: this.depthNow,
          });
        }
        if (outcome === "pause") {
          this.hostFailures++;
          const until =
            Date.now() +
            backoffMs(this.hostFailures, this.opts.baseDelayMs, this.opts.maxDelayMs, this.opts.random);
          this.pausedUntil = Math.max(this.pausedUntil, until);
        }
        try {
          await sleep(
            backoffMs(lane.failures, this.opts.baseDelayMs, this.opts.maxDelayMs, this.opts.random),
            signal,
          );
        } catch {
          return;
        }
        continue;
      }
      this.hostFailures = 0;
      if (outcome === "refused") {
        const e = error as FunctionUrlError;
        // compute-events dead-lettered it with its reason: sending it again would earn the same
        this.log.error("compute.report_refused", {
          key,
          kind: kindOf(head.report.body),
          status: e.status,
          answer: e.body.slice(0, 500),
        });
      } else if (lane.warned) {
        this.log.info("compute.report_delivered", {
          key,
          kind: kindOf(head.report.body),
          tries: lane.failures + 1,
          waited_s: Math.round((Date.now() - head.report.spooledAt) / 1000),
        });
      }
      lane.failures = 0;
      lane.warned = false;
      await this.store
        .remove(head.report)
        .catch((e) => this.log.warn("compute.spool_remove_failed", { key, error: e }));
      lane.queue.shift();
      this.settled(head, outcome === "applied");
    }
  }

  private settled(p: Pending, applied: boolean): void {
    this.depthNow--;
    p.settle?.(applied);
    if (this.depthNow === 0) for (const r of this.idle.splice(0)) r();
  }

  /** A place among the reports in flight, after the host-wide pause; one at a time while it fails. */
  private async slot(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const wait = this.pausedUntil - Date.now();
      if (wait > 0) {
        await sleep(wait, signal);
        continue;
      }
      const limit = this.hostFailures > 0 ? 1 : this.opts.maxInFlight;
      if (this.inFlight < limit) {
        this.inFlight++;
        return;
      }
      await new Promise<void>((r) => this.waiting.push(r));
    }
  }

  private release(): void {
    this.inFlight--;
    this.wake();
  }

  private wake(): void {
    for (const r of this.waiting.splice(0)) r();
  }
}

/** A report's kind, for the logs (the body is the report's JSON). */
function kindOf(body: string): string | undefined {
  return /"kind":"([a-z_]+)"/.exec(body)?.[1];
}
