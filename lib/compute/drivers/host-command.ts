// A command the libvirt driver runs on its host (qemu-img, genisoimage, virsh migrate): each with a
// deadline (Nova's libvirt driver times its long calls out too), killed past it, and an error
// naming the command, the guest and the host, with what the command said.
import { execFile } from "node:child_process";

/** Deadlines of the driver's commands unless told otherwise. */
export const COMMAND_TIMEOUT_MS = 120_000;

export class HostCommandError extends Error {
  override name = "HostCommandError";
}

export interface CommandContext {
  host: string;
  /** the guest it is for, if any */
  instance?: string;
  /** what it is for, said instead of the guest and host (the local libvirt hosts' own commands) */
  purpose?: string;
  timeoutMs?: number;
  /** written to its standard input (nft -f -) */
  input?: string;
}

/** Runs `argv` (no shell); resolves with its stdout, rejects with a HostCommandError. */
export function hostCommand(argv: readonly string[], ctx: CommandContext): Promise<string> {
  const timeoutMs = ctx.timeoutMs ?? COMMAND_TIMEOUT_MS;
  const about = ctx.purpose ?? `${ctx.instance ? `instance ${ctx.instance}, ` : ""}host ${ctx.host}`;
  const what = `${argv.join(" ")} (${about})`;
  return new Promise((resolve, reject) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const code = (err as { code?: unknown }).code;
        const why = err.killed
          ? `no answer in ${(timeoutMs / 1000).toFixed(1)} s, killed`
          : code === "ENOENT"
            ? `${argv[0]} is not installed`
            : `exit ${code}`;
        const said = (stderr || stdout).trim();
        reject(new HostCommandError(`${what}: ${why}${said ? `: ${said}` : ""}`));
      },
    );
    if (ctx.input !== undefined) {
      // a command that exits before reading all of it: its exit says why, not the pipe
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(ctx.input);
    }
  });
}

/**
 * A guest's root disk as Nova's libvirt driver makes it: a qcow2 overlay of `rootGb` on the cached
 * image `base` (its own format), at spawn and at a live migration's destination alike.
 */
export function qcow2Overlay(
  base: string,
  baseFormat: "qcow2" | "raw",
  disk: string,
  rootGb: number,
  ctx: CommandContext,
): Promise<string> {
  return hostCommand(
    ["qemu-img", "create", "-f", "qcow2", "-F", baseFormat, "-b", base, disk, `${rootGb}G`],
    ctx,
  );
}
