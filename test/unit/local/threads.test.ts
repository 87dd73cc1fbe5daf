// The local runtime's thread RPC (local/threads.ts) over a real MessageChannel: a value comes back,
// an error crosses with its name, message and code (what Step Functions' Catch and the SDK's
// callers match on), a call to a missing handler fails, a gone thread fails the calls it leaves,
// bytes cross in a buffer of their own size, and a thread that dies fails its calls instead of
// leaving them waiting.
import { MessageChannel } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { asBuffer, exact, rpcOver, startThread } from "../../../local/threads.js";

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const c of channels.splice(0)) {
    c.port1.close();
    c.port2.close();
  }
});

function pair() {
  const c = new MessageChannel();
  channels.push(c);
  return { a: rpcOver(c.port1), b: rpcOver(c.port2) };
}

describe("rpcOver", () => {
  it("answers a call with the handler's value, either way", async () => {
    const { a, b } = pair();
    b.handle("double", (n: number) => n * 2);
    a.handle("greet", async (who: string) => `hello ${who}`);
    expect(await a.call("double", 21)).toBe(42);
    expect(await b.call("greet", "main")).toBe("hello main");
  });

  it("an error crosses with its name, message and code", async () => {
    const { a, b } = pair();
    b.handle("fail", () => {
      throw Object.assign(new Error("no such table"), { name: "ResourceNotFoundException", code: "E42" });
    });
    const e = (await a.call("fail", {}).catch((x: unknown) => x)) as Error & { code?: string };
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("ResourceNotFoundException");
    expect(e.message).toBe("no such table");
    expect(e.code).toBe("E42");
  });

  it("a call without a handler fails and says which", async () => {
    const { a } = pair();
    await expect(a.call("nothing", 1)).rejects.toThrow("no handler for nothing");
  });

  it("fail() rejects the calls waiting and every call after", async () => {
    const { a, b } = pair();
    b.handle("never", () => new Promise(() => {}));
    const waiting = a.call("never", 1);
    a.fail(new Error("the functions thread exited (code 1)"));
    await expect(waiting).rejects.toThrow("exited (code 1)");
    await expect(a.call("never", 2)).rejects.toThrow("exited (code 1)");
  });
});

describe("bytes", () => {
  it("exact() gives a view of a larger buffer a buffer of its own size; asBuffer() the same bytes", () => {
    const pooled = Buffer.from("a short body"); // from Node's shared pool
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.byteLength);
    const own = exact(pooled);
    expect(own.buffer.byteLength).toBe(pooled.byteLength);
    expect(asBuffer(own).toString()).toBe("a short body");
    const whole = new Uint8Array(8);
    expect(exact(whole)).toBe(whole);
  });
});

describe("startThread", () => {
  it("a thread's uncaught error fails the call waiting and every call after", async () => {
    const thread = await startThread(
      "crashing",
      new URL("./fixtures/crashing-thread.ts", import.meta.url).href,
      {},
    );
    try {
      expect(thread.ready).toEqual({ pid: process.pid });
      expect(await thread.rpc.call("echo", { a: 1 })).toEqual({ a: 1 });
      await expect(thread.rpc.call("crash", {})).rejects.toThrow("the thread's uncaught error");
      await expect(thread.rpc.call("echo", 2)).rejects.toThrow();
    } finally {
      await thread.stop();
    }
  });
});
