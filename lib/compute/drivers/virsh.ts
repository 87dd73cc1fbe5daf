// One persistent connection to libvirt: `virsh` as an interactive shell, fed one command at a
// time. A persistent connection because libvirt's test driver (test:///default, what the tests
// run against) keeps its state only for one connection's life; and one process for every call
// is what a real hypervisor's driver would not do either. Each answer is delimited with virsh's
// own `echo` of a marker that only the answer contains.
//
// virsh can stop answering for good. virsh 9.0 (Debian 12) runs managedsave, save, dump and
// migrate in a worker thread that ends with g_main_loop_quit(), while its main thread attaches the
// job's 500 ms progress timer and only then calls g_main_loop_run() (tools/virsh-domain.c:
// doManagedsave and cmdManagedSave, virshWatchJob). A worker done first (libvirt's test driver
// saves at once) quits a loop not yet running; g_main_loop_run() then marks it running again and
// nothing is left to quit it: virsh polls its progress timer forever (its Ctrl-C watch exists only
// on a TTY, and virshWatchTimeout only runs migrate's --timeout action). So every command has a
// deadline, job-watched ones a short one after which a second connection asks whether the job is
// still running (a real save of a large guest takes minutes); past it the shell is killed and the
// next command connects again, first replaying `restore` where the state died with the connection.
import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process";

/** virsh's commands that run as a watched job (virshWatchJob): the ones that can lose their end. */
const JOB_WATCHED = /^(managedsave|save|dump|migrate)\s/;

/** Defaults of the deadlines (LibvirtDriverOptions' virshTimeoutMs and virshJobTimeoutMs). */
const VIRSH_TIMEOUT_MS = 300_000;
const VIRSH_JOB_TIMEOUT_MS = 15_000;

export class VirshError extends Error {
  override name = "VirshError";
}

/** The connection was given up (no answer in time) or died during the command: worth a retry. */
export class VirshConnectionLost extends VirshError {
  override name = "VirshConnectionLost";
}

export interface VirshShellOptions {
  /** the virsh program (tests: a stand-in) */
  binary?: string;
  /** how long a command may go unanswered before the connection is given up and made again */
  timeoutMs?: number;
  /** the same for job-watched commands, each time a second connection finds no job running */
  jobTimeoutMs?: number;
  /** commands that bring a new connection back to what the lost one held (test:///: the domains) */
  restore?: () => string[];
  /** the host it is, named in errors */
  host?: string;
}

interface Pending {
  command: string;
  marker: string;
  resolve: (out: string) => void;
  reject: (e: Error) => void;
  sent: number;
  timer?: NodeJS.Timeout;
}

export class VirshShell {
  private proc: ChildProcessWithoutNullStreams | undefined;
  private buffer = "";
  private queue: Pending[] = [];
  private current: Pending | undefined;
  private seq = 0;
  private closed = false;
  private readonly binary: string;
  private readonly timeoutMs: number;
  private readonly jobTimeoutMs: number;
  /** connections made (more than one: the shell died or was given up, and was reconnected) */
  connections = 0;
  /** where, in errors: the host and its URI, or the URI */
  private readonly where: string;

  constructor(
    readonly uri: string,
    private readonly opts: VirshShellOptions = {},
  ) {
    this.binary = opts.binary ?? "virsh";
    this.timeoutMs = opts.timeoutMs ?? VIRSH_TIMEOUT_MS;
    this.jobTimeoutMs = opts.jobTimeoutMs ?? VIRSH_JOB_TIMEOUT_MS;
    this.where = opts.host ? `host ${opts.host} (${uri})` : uri;
  }

  private connect(): ChildProcessWithoutNullStreams {
    // stderr into stdout's pipe: an error then comes before its command's marker, in order; a
    // process group of its own, so that giving up kills whatever the program started
    const proc = spawn("sh", ["-c", 'exec "$0" -q -c "$1" 2>&1', this.binary, this.uri], {
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.connections++;
    proc.stdout.setEncoding("utf8");
    proc.stderr.setEncoding("utf8");
    proc.stdout.on("data", (d: string) => this.data(d));
    proc.stderr.on("data", (d: string) => this.data(d));
    proc.stdin.on("error", () => undefined); // a dead shell: its exit says so
    proc.on("error", (e) => {
      if (this.proc !== proc) return;
      this.proc = undefined;
      this.fail(new VirshError(`cannot run ${this.binary} -c ${this.uri}: ${e.message}`));
    });
    proc.on("exit", (code, signal) => {
      // given up already, or closed: its commands are settled
      if (this.proc !== proc) return;
      this.proc = undefined;
      this.fail(
        new VirshConnectionLost(
          `virsh -c ${this.uri} exited (${code ?? signal}) during ${this.current?.command ?? "no command"}`,
        ),
      );
    });
    return proc;
  }

  private fail(e: Error): void {
    const all = [...(this.current ? [this.current] : []), ...this.queue];
    this.current = undefined;
    this.queue = [];
    this.buffer = "";
    for (const p of all) {
      clearTimeout(p.timer);
      p.reject(e);
    }
  }

  /** Runs one virsh command; rejects with virsh's `error:` lines when it fails. */
  run(command: string): Promise<string> {
    if (this.closed) return Promise.reject(new VirshError("the libvirt connection is closed"));
    if (/[\n\r]/.test(command))
      return Promise.reject(new VirshError(`one line only: ${JSON.stringify(command)}`));
    return new Promise((resolve, reject) => {
      this.queue.push(this.pending(command, resolve, reject));
      this.next();
    });
  }

  private pending(command: string, resolve: Pending["resolve"], reject: Pending["reject"]): Pending {
    return { command, marker: `__novaless_end_${++this.seq}__`, resolve, reject, sent: 0 };
  }

  private next(): void {
    if (this.current || this.queue.length === 0) return;
    if (!this.proc) {
      // a connection after the first: what the lost one held comes back before anything queued
      if (this.connections > 0 && this.opts.restore) {
        const ignore = () => undefined; // the retried action reads the states it needs
        this.queue.unshift(...this.opts.restore().map((c) => this.pending(c, ignore, ignore)));
      }
      this.proc = this.connect();
    }
    const p = this.queue.shift()!;
    this.current = p;
    const m = p.marker;
    // the echoed command reads `"__novaless""_end_N__"`; only the answer has the marker whole
    const split = m.indexOf("_end_");
    this.proc.stdin.write(`${p.command}\necho "${m.slice(0, split)}""${m.slice(split)}"\n`);
    p.sent = Date.now();
    this.arm(p);
  }

  private arm(p: Pending): void {
    const job = JOB_WATCHED.test(p.command);
    p.timer = setTimeout(() => void this.overdue(p, job), job ? this.jobTimeoutMs : this.timeoutMs);
  }

  /** No answer in time: a job still running is waited for; anything else gives the connection up. */
  private async overdue(p: Pending, job: boolean): Promise<void> {
    if (job && (await this.jobRunning(p.command))) {
      if (this.current === p) this.arm(p);
      return;
    }
    if (this.current !== p) return;
    const seconds = ((Date.now() - p.sent) / 1000).toFixed(1);
    const cause = job
      ? `, and no job is running on the domain: virsh lost the end of its job (a race in virsh's virshWatchJob)`
      : "";
    const proc = this.proc;
    this.proc = undefined;
    this.fail(
      new VirshConnectionLost(
        `virsh ${p.command} on ${this.where}: no answer in ${seconds} s${cause}; the connection is closed and made again for the next command`,
      ),
    );
    if (proc) killGroup(proc);
  }

  /**
   * Whether the domain of a job-watched command has a job running, asked over a second
   * connection. On test:/// that connection has no such domain: no job (the test driver's are
   * instant anyway).
   */
  private jobRunning(command: string): Promise<boolean> {
    const domain = command
      .split(/\s+/)
      .slice(1)
      .find((a) => !a.startsWith("--"));
    if (!domain) return Promise.resolve(false);
    return new Promise((resolve) => {
      execFile(
        this.binary,
        ["-q", "-c", this.uri, "domjobinfo", domain],
        { timeout: this.jobTimeoutMs },
        (err, out) => resolve(!err && /^Job type:\s*(Bounded|Unbounded)/m.test(out)),
      );
    });
  }

  private data(chunk: string): void {
    this.buffer += chunk;
    const p = this.current;
    if (!p) return;
    const at = this.buffer.indexOf(p.marker);
    if (at < 0) return;
    clearTimeout(p.timer);
    const raw = this.buffer.slice(0, at);
    this.buffer = this.buffer.slice(at + p.marker.length);
    this.current = undefined;
    const lines = raw
      .split("\n")
      .map((l) => l.replace(/^(virsh # )+/, ""))
      .filter((l) => l !== p.command && !l.startsWith('echo "__novaless'));
    const errors = lines.filter((l) => l.startsWith("error:"));
    if (errors.length)
      p.reject(
        new VirshError(
          `virsh ${p.command} on ${this.where}: ${errors.map((e) => e.slice(6).trim()).join("; ")}`,
        ),
      );
    else p.resolve(lines.join("\n").trim());
    this.next();
  }

  async close(): Promise<void> {
    this.closed = true;
    const proc = this.proc;
    this.proc = undefined;
    this.fail(new VirshError("the libvirt connection is closed"));
    if (!proc) return;
    await new Promise<void>((resolve) => {
      proc.once("exit", () => resolve());
      proc.stdin.end("quit\n");
      setTimeout(() => killGroup(proc), 2000).unref();
    });
  }
}

function killGroup(proc: ChildProcessWithoutNullStreams): void {
  try {
    process.kill(-proc.pid!, "SIGKILL");
  } catch {
    // gone already
  }
}
