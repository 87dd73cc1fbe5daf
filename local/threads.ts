// The local runtime's worker threads: the functions (function-thread.ts) and dynalite
// (dynalite-thread-worker.ts) each in a thread of its own, as on AWS they run apart from each other. On 2
// cores one thread carried the SDK's per-call work, the handlers and the emulators together, and
// capped a build's throughput at what that one thread could do.
//
// A thread and the main thread call each other by name over its port (a small RPC); a value
// crosses by structured clone, an error as its name, message, stack and code.
import { type MessagePort, Worker } from "node:worker_threads";
import { log } from "../lib/log.js";
import type { RawRequest, RawResponse } from "./iam/gateway.js";

export interface ThreadError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
}

type Message =
  | { id: number; method: string; arg: unknown }
  | { re: number; value?: unknown; error?: ThreadError };

export interface Rpc {
  call<T>(method: string, arg: unknown, transfer?: ArrayBuffer[]): Promise<T>;
  handle(method: string, fn: (arg: never) => unknown): void;
  /** every call still waiting fails with `reason` (the other side is gone) */
  fail(reason: Error): void;
}

export function errorOf(e: unknown): ThreadError {
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: unknown }).code;
  return {
    name: err.name,
    message: err.message,
    ...(err.stack ? { stack: err.stack } : {}),
    ...(typeof code === "string" ? { code } : {}),
  };
}

export function errorFrom(t: ThreadError): Error {
  return Object.assign(new Error(t.message), t);
}

/** A Buffer crosses a thread as a Uint8Array: the same bytes as a Buffer again, not copied. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Bytes about to cross a thread, in an ArrayBuffer of their own size: a Buffer is often a view of
 * a larger one (Node's 8 KB pool, a socket's read), and a view crosses with its whole buffer copied.
 */
export function exact(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? bytes
    : new Uint8Array(bytes);
}

export function rpcOver(port: MessagePort | Worker): Rpc {
  let next = 0;
  let failed: Error | undefined;
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  const handlers = new Map<string, (arg: never) => unknown>();
  const reply = (re: number, out: { value?: unknown; error?: ThreadError }) =>
    port.postMessage({ re, ...out } satisfies Message);
  port.on("message", (msg: Message) => {
    if ("re" in msg) {
      const p = pending.get(msg.re);
      pending.delete(msg.re);
      if (msg.error) p?.reject(errorFrom(msg.error));
      else p?.resolve(msg.value);
      return;
    }
    const fn = handlers.get(msg.method);
    if (!fn) return reply(msg.id, { error: errorOf(new Error(`no handler for ${msg.method}`)) });
    Promise.resolve()
      .then(() => fn(msg.arg as never))
      .then(
        (value) => reply(msg.id, { value }),
        (e: unknown) => reply(msg.id, { error: errorOf(e) }),
      );
  });
  return {
    call: <T>(method: string, arg: unknown, transfer?: ArrayBuffer[]) =>
      new Promise<T>((resolve, reject) => {
        if (failed) return reject(failed);
        const id = ++next;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        port.postMessage({ id, method, arg } satisfies Message, transfer);
      }),
    handle: (method, fn) => handlers.set(method, fn),
    fail: (reason) => {
      failed = reason;
      for (const p of pending.values()) p.reject(reason);
      pending.clear();
    },
  };
}

/**
 * A service of raw AWS requests (the gateway's serve(), an emulator's listener) offered over `rpc`
 * as `method`: the bytes arrive as a Buffer again and leave in a buffer of their own size.
 */
export function serveRaw(rpc: Rpc, method: string, serve: (req: RawRequest) => Promise<RawResponse>): void {
  rpc.handle(method, async (req: RawRequest) => {
    const res = await serve({ ...req, body: asBuffer(req.body) });
    return { ...res, body: exact(res.body) };
  });
}

/** That service as the other side calls it. */
export function callRaw(rpc: Rpc, method: string): (req: RawRequest) => Promise<RawResponse> {
  return async (req) => {
    const res = await rpc.call<RawResponse>(method, { ...req, body: exact(req.body) });
    return { ...res, body: asBuffer(res.body) };
  };
}

const BOOT = new URL("./thread-boot.mjs", import.meta.url);

export interface Thread {
  name: string;
  rpc: Rpc;
  /** how busy the thread's event loop has been (performance.eventLoopUtilization's reading) */
  utilization: Worker["performance"]["eventLoopUtilization"];
  /** what the thread's entry answered to "ready" */
  ready: unknown;
  stop(): Promise<void>;
}

/**
 * Starts `entry` (a TypeScript module next to this one) in a worker thread with `data` as its
 * workerData, and waits for it to call "ready". The worker keeps a copy of process.env as it is now.
 */
export async function startThread(
  name: string,
  entry: string,
  data: Record<string, unknown>,
): Promise<Thread> {
  const worker = new Worker(BOOT, {
    name,
    workerData: { ...data, entry: new URL(entry, import.meta.url).href },
  });
  const rpc = rpcOver(worker);
  const ready = new Promise<unknown>((resolve, reject) => {
    rpc.handle("ready", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) =>
      reject(new Error(`the ${name} thread exited (code ${code}) before it was ready`)),
    );
  });
  let stopping = false;
  // An error the thread did not catch ends it: every call then fails, and the log says why.
  worker.on("error", (error) => {
    log.error("runtime.thread_failed", { thread: name, error });
    rpc.fail(error);
  });
  worker.on("exit", (code) => {
    if (!stopping) log.error("runtime.thread_exited", { thread: name, code });
    rpc.fail(new Error(`the ${name} thread exited (code ${code})`));
  });
  return {
    name,
    rpc,
    utilization: worker.performance.eventLoopUtilization.bind(worker.performance),
    ready: await ready,
    stop: async () => {
      stopping = true;
      await worker.terminate();
    },
  };
}
