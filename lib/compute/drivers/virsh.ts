// One persistent connection to libvirt: `virsh` as an interactive shell, fed one command at a
// time. A persistent connection because libvirt's test driver (test:///default, what the tests
// run against) keeps its state only for one connection's life; and one process for every call
// is what a real hypervisor's driver would not do either. Each answer is delimited with virsh's
// own `echo` of a marker that only the answer contains.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

export class VirshError extends Error {
  override name = "VirshError";
}

interface Pending {
  command: string;
  marker: string;
  resolve: (out: string) => void;
  reject: (e: Error) => void;
}

export class VirshShell {
  private proc: ChildProcessWithoutNullStreams | undefined;
  private buffer = "";
  private queue: Pending[] = [];
  private current: Pending | undefined;
  private seq = 0;
  private closed = false;
  /** connections made (more than one: the shell died and was reconnected, state lost on test:///) */
  connections = 0;

  constructor(
    readonly uri: string,
    private readonly onReconnect?: (why: string) => void,
  ) {}

  private connect(): ChildProcessWithoutNullStreams {
    // stderr into stdout's pipe: an error then comes before its command's marker, in order
    const proc = spawn("sh", ["-c", 'exec virsh -q -c "$1" 2>&1', "sh", this.uri], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.connections++;
    proc.stdout.setEncoding("utf8");
    proc.stderr.setEncoding("utf8");
    proc.stdout.on("data", (d: string) => this.data(d));
    proc.stderr.on("data", (d: string) => this.data(d));
    proc.on("error", (e) => this.fail(new VirshError(`cannot run virsh -c ${this.uri}: ${e.message}`)));
    proc.on("exit", (code) => {
      if (this.proc === proc) this.proc = undefined;
      if (!this.closed) {
        this.fail(
          new VirshError(
            `virsh -c ${this.uri} exited (${code}) during ${this.current?.command ?? "no command"}`,
          ),
        );
        this.onReconnect?.(`virsh exited with ${code}`);
      }
    });
    return proc;
  }

  private fail(e: Error): void {
    const all = [...(this.current ? [this.current] : []), ...this.queue];
    this.current = undefined;
    this.queue = [];
    this.buffer = "";
    for (const p of all) p.reject(e);
  }

  /** Runs one virsh command; rejects with virsh's `error:` lines when it fails. */
  run(command: string): Promise<string> {
    if (this.closed) return Promise.reject(new VirshError("the libvirt connection is closed"));
    if (/[\n\r]/.test(command))
      return Promise.reject(new VirshError(`one line only: ${JSON.stringify(command)}`));
    return new Promise((resolve, reject) => {
      this.queue.push({ command, marker: `__novaless_end_${++this.seq}__`, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.current || this.queue.length === 0) return;
    this.current = this.queue.shift()!;
    this.proc ??= this.connect();
    const m = this.current.marker;
    // the echoed command reads `"__novaless""_end_N__"`; only the answer has the marker whole
    const split = m.indexOf("_end_");
    this.proc.stdin.write(`${this.current.command}\necho "${m.slice(0, split)}""${m.slice(split)}"\n`);
  }

  private data(chunk: string): void {
    this.buffer += chunk;
    const p = this.current;
    if (!p) return;
    const at = this.buffer.indexOf(p.marker);
    if (at < 0) return;
    const raw = this.buffer.slice(0, at);
    this.buffer = this.buffer.slice(at + p.marker.length);
    this.current = undefined;
    const lines = raw
      .split("\n")
      .map((l) => l.replace(/^(virsh # )+/, ""))
      .filter((l) => l !== p.command && !l.startsWith('echo "__novaless'));
    const errors = lines.filter((l) => l.startsWith("error:"));
    if (errors.length)
      p.reject(new VirshError(`virsh ${p.command}: ${errors.map((e) => e.slice(6).trim()).join("; ")}`));
    else p.resolve(lines.join("\n").trim());
    this.next();
  }

  async close(): Promise<void> {
    this.closed = true;
    const proc = this.proc;
    this.proc = undefined;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      proc.once("exit", () => resolve());
      proc.stdin.end("quit\n");
      setTimeout(() => proc.kill("SIGKILL"), 2000).unref();
    });
  }
}
