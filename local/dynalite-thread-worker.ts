// dynalite (with dynalite-tx.ts's transactions) in a thread of its own (threads.ts): it listens
// on 127.0.0.1 for other callers, as in the main thread, and answers the gateway's requests by
// message, without a socket.
import type { AddressInfo } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import { createDynalite } from "./dynalite-tx.js";
import { listenerUpstream } from "./in-process.js";
import { rpcOver, serveRaw } from "./threads.js";

if (!parentPort) throw new Error("dynalite-thread-worker.ts runs in a worker thread");
const rpc = rpcOver(parentPort);
const server = createDynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen((workerData as { port: number }).port, "127.0.0.1", () => resolve());
});
const [listener] = server.listeners("request") as Parameters<typeof listenerUpstream>[0][];
if (!listener) throw new Error("dynalite has no request listener");
const upstream = listenerUpstream(listener);
serveRaw(rpc, "dynamodb", (req) => upstream.call(req));
rpc.handle("close", async () => {
  await upstream.close();
  await new Promise<void>((resolve, reject) => {
    server.close((err?: Error) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
});
await rpc.call("ready", { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
