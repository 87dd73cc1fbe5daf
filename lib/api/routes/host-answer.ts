// The API's questions to a server's host (os-getConsoleOutput, diagnostics): cast to the host's
// queue, then wait for compute-events to keep the host's answer (lib/instances/host-answers.ts).
// Nova's API makes these RPC calls and waits for the answer the same way.
import { setTimeout as sleep } from "node:timers/promises";
import type { ComputeMessage } from "../../messages/compute.js";
import type { PowerDeps } from "../deps.js";

/** The host's answer, or undefined when none came within the timeout (consoleTimeoutMs). */
export async function askHost<T>(
  p: PowerDeps,
  queueUrl: string,
  question: ComputeMessage,
  read: () => Promise<T | undefined>,
): Promise<T | undefined> {
  await p.castToCompute(queueUrl, question);
  const deadline = Date.now() + p.consoleTimeoutMs;
  for (;;) {
    const answer = await read();
    if (answer !== undefined) return answer;
    if (Date.now() >= deadline) return undefined;
    await sleep(p.consolePollMs);
  }
}
