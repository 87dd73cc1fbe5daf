// A worker thread of the local runtime starts here (threads.ts): tsx registered in this thread (a
// worker inherits neither vitest's loader nor, on Node 20, tsx's from --import), then its
// TypeScript entry.
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.entry);
