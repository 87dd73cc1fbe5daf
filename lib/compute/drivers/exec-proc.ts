// What the exec driver reads of its guests' processes from /proc, and the signals it sends their
// groups. A guest is a process group whose leader the driver started (or a predecessor did).
import { readdirSync, readFileSync } from "node:fs";

/** An instance's directory name (and NOVALESS_INSTANCE_UUID's value): a UUID. */
export const UUID_DIR = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The pids /proc lists; none when it cannot be read. */
export function procPids(): string[] {
  try {
    return readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return [];
  }
}

/**
 * /proc/<pid>/stat's fields from the third (state) on: the command name (field 2) may hold
 * spaces, so they are counted from its closing parenthesis. Undefined when the process is gone.
 */
export function statFields(pid: number | string): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The process's state letter (/proc/<pid>/stat field 3): R, S, D, T (stopped)… */
export function processState(pid: number): string | undefined {
  return statFields(pid)?.[0];
}

/** The process's start time (/proc/<pid>/stat field 22): a recycled pid does not match it. */
export function startTimeOf(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

/** The process's group (/proc/<pid>/stat field 5). */
function pgidOf(pid: number): number | undefined {
  const f = statFields(pid);
  return f ? Number(f[2]) : undefined;
}

export function signalGroup(pid: number, s: NodeJS.Signals): void {
  try {
    process.kill(-pid, s);
  } catch {
    // the group is gone
  }
}

/** Whether the process runs, and is the one started at `started` (when known). */
export function alive(pid: number | undefined, started: string | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return started === undefined || startTimeOf(pid) === started;
}

/**
 * Group leaders of this host's guests, by instance: processes whose environment names the host
 * and whose config dir is where this driver keeps the instance's (`configDirOf`).
 */
export function* guestProcesses(
  host: string,
  configDirOf: (id: string) => string,
): Generator<[string, number]> {
  for (const p of procPids()) {
    let env = "";
    try {
      env = readFileSync(`/proc/${p}/environ`, "utf8");
    } catch {
      continue;
    }
    const vars = env.split("\0");
    if (!vars.includes(`NOVALESS_HOST=${host}`)) continue;
    const id = vars.find((v) => v.startsWith("NOVALESS_INSTANCE_UUID="))?.slice(23);
    if (!id || !UUID_DIR.test(id)) continue;
    // A host's name alone does not make a guest ours: another agent of the same name on this
    // machine (a second runtime, a test) keeps its guests under another instances path.
    if (!vars.includes(`NOVALESS_CONFIG_DIR=${configDirOf(id)}`)) continue;
    // the group leader only: its group is the guest
    if (Number(p) === pgidOf(Number(p))) yield [id, Number(p)];
  }
}
