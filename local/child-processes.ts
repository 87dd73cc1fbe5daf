// Dev only: servers started as child processes (the external suite's emulators, LocalStack), each
// in a process group of its own, ready when it prints a line of its own, and stopped as a group.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

const READY_MS = 30_000;
const STOP_MS = 5_000;

export interface Started {
  /** the ready pattern's first group */
  value: string;
  /** everything it printed until then */
  output: string;
}

/** Spawns `name` and resolves with the first match of `ready` on its stdout. */
export function startProcess(
  children: ChildProcess[],
  name: string,
  args: string[],
  ready: RegExp,
  opts: { command?: string; env?: NodeJS.ProcessEnv; readyMs?: number } = {},
): Promise<Started> {
  const child = spawn(opts.command ?? process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: opts.env ?? process.env,
  });
  children.push(child);
  let output = "";
  const readyMs = opts.readyMs ?? READY_MS;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not report ready within ${readyMs} ms: ${output}`)),
      readyMs,
    );
    const onOutput = (chunk: Buffer) => {
      output += chunk.toString();
    };
    const onData = (chunk: Buffer) => {
      onOutput(chunk);
      const m = ready.exec(output);
      if (!m?.[1]) return;
      clearTimeout(timer);
      // Ready: from now on its output is read and dropped, so the pipes never fill.
      child.stdout?.off("data", onData).resume();
      child.stderr?.off("data", onOutput).resume();
      resolve({ value: m[1], output });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onOutput);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`${name} could not start: ${e.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (code ${code}, signal ${signal}) before it was ready: ${output}`));
    });
  });
}

/**
 * Every child runs in a process group of its own (detached), and the whole group is signalled: a
 * child's own children (tsx's node, vitest's workers) go with it instead of being orphaned.
 */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const group = -child.pid;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(group, signal);
    } catch {
      // the group is gone already
    }
  };
  const exited = once(child, "exit");
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), STOP_MS);
  await exited;
  clearTimeout(timer);
}

/** A port free on 127.0.0.1 now (the server taking it binds it a moment later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}
