// The real OpenStack clients (Debian's python3-openstackclient, python3-novaclient,
// python3-openstacksdk) against a whole local novaless: the runtime runs in this process, the
// clients are child processes reading a clouds.yaml written for it, as an operator's would be.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Runtime, type RuntimeOptions, startRuntime } from "../../local/runtime.js";

const here = dirname(fileURLToPath(import.meta.url));

/** Debian's SDK is in the system Python; a pyenv or venv python3 first on PATH does not have it. */
export const PYTHON = "/usr/bin/python3";

/** The microversions the issue asks every client to work at. */
export const VERSIONS = ["2.1", "2.47", "2.79", "latest"] as const;

// biome-ignore lint/suspicious/noExplicitAny: the clients' JSON output is arbitrary; the assertions check its shape
export type Json = any;

export type Tool = "openstack" | "nova" | "openstacksdk";

/** Synchronous on purpose: it decides `it.skipIf` at collection time, before any runtime runs. */
function present(tool: Tool): boolean {
  const [cmd, args] =
    tool === "openstacksdk" ? [PYTHON, ["-c", "import openstack"]] : ["sh", ["-c", `command -v ${tool}`]];
  return spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
}

/**
 * True when `tool` is missing, after saying so: the suite's `it.skipIf(missing("openstack"))`
 * skips visibly, with the line below in the test output (scripts/install-test-tools.sh installs
 * the tools when it can).
 */
export function missing(tool: Tool): boolean {
  const absent = !present(tool);
  if (absent)
    console.warn(
      `test/clients: ${tool} is not installed (scripts/install-test-tools.sh installs it as root on Debian): its tests skip`,
    );
  return absent;
}

/**
 * The clouds the clouds.yaml names: password auth as each seeded user, a token (when given), and
 * those a test adds (`addCloud`: a tenant's user, an application credential).
 */
export type CloudName = "admin" | "demo" | "token" | (string & {});

export class ClientError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | string | undefined,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`\`${command}\` failed (exit ${code}):\n${stderr.trim() || stdout.trim()}`);
  }
}

export interface Cloud {
  runtime: Runtime;
  url: string;
  /** the temp dir holding clouds.yaml */
  dir: string;
  /** `openstack --os-cloud <cloud> [--os-compute-api-version v] args… [-f json]`, parsed */
  openstack(args: string[], opts?: CommandOptions): Promise<Json>;
  /** `openstack …` expected to fail: its exit status and stderr */
  openstackFails(args: string[], opts?: CommandOptions): Promise<ClientError>;
  /** `nova [--os-compute-api-version v] args…` with the cloud's OS_* variables; its stdout */
  nova(args: string[], opts?: CommandOptions): Promise<string>;
  /**
   * Another cloud in clouds.yaml (or a new entry for one added before), as an operator adds one
   * for a new tenant: `auth` is its auth block (auth_url is added), `authType` keystoneauth's
   * plugin (password unless said).
   */
  addCloud(name: string, auth: Record<string, string>, authType?: string): Promise<void>;
  /** test/clients/sdk_probe.py <cloud> <version> <operation> args…: its JSON on stdout */
  sdk(operation: string, args?: string[], opts?: CommandOptions): Promise<Json>;
  stop(): Promise<void>;
}

export interface CommandOptions {
  cloud?: CloudName;
  /** --os-compute-api-version; unset: the client's default (2.1 for openstack and nova) */
  version?: string;
  /** add `-f json` and parse stdout (default true; false returns stdout as it is) */
  json?: boolean;
}

const PASSWORDS: Record<"admin" | "demo", string> = { admin: "admin-secret", demo: "demo-secret" };

/**
 * clouds.yaml as an operator writes it for DevStack: Keystone at <base>/identity, RegionOne;
 * with `token`, also a cloud "token" authenticating by Keystone's token method (project admin).
 */
export function cloudsYaml(base: string, token?: string, extra: string[] = []): string {
  const cloud = (name: string, authType: string, auth: string[]) =>
    [
      `  ${name}:`,
      `    auth_type: ${authType}`,
      "    auth:",
      `      auth_url: ${base}/identity`,
      ...auth.map((line) => `      ${line}`),
      "    region_name: RegionOne",
      "    identity_api_version: 3",
    ].join("\n");
  const user = (name: "admin" | "demo") =>
    cloud(name, "password", [
      `username: ${name}`,
      `password: ${PASSWORDS[name]}`,
      `project_name: ${name}`,
      "user_domain_name: Default",
      "project_domain_name: Default",
    ]);
  const clouds = [user("admin"), user("demo")];
  if (token)
    clouds.push(
      cloud("token", "token", [`token: ${token}`, "project_name: admin", "project_domain_name: Default"]),
    );
  return `clouds:\n${[...clouds, ...extra].join("\n")}\n`;
}

/** One more cloud's entry for clouds.yaml (the same layout as cloudsYaml's own). */
export function cloudEntry(
  base: string,
  name: string,
  authType: string,
  auth: Record<string, string>,
): string {
  return [
    `  ${name}:`,
    `    auth_type: ${authType}`,
    "    auth:",
    `      auth_url: ${base}/identity`,
    ...Object.entries(auth).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`),
    "    region_name: RegionOne",
    "    identity_api_version: 3",
  ].join("\n");
}

/** The environment the children get: ours without any OS_* an operator's shell may carry. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("OS_")) env[k] = v;
  // Python's warnings (deprecations in the Debian packages) would mix into stderr only.
  return { ...env, PYTHONWARNINGS: "ignore", ...extra };
}

const COMMAND_TIMEOUT_MS = 90_000;

/** A client command: what /usr/bin/openstack, /usr/bin/nova or `python3 sdk_probe.py` runs. */
type Invocation = { tool: "openstack" | "nova" | "sdk"; argv: string[]; env: NodeJS.ProcessEnv };

/**
 * test/clients/forkserver.py: one warm Python that forks each command from the clients' own
 * entry points (their imports are most of a command's CPU; several hundred commands run here).
 */
class ForkServer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, (r: { code: number; stdout: string; stderr: string }) => void>();
  private next = 0;
  private buf = "";

  constructor() {
    this.child = spawn(PYTHON, [join(here, "forkserver.py")], { env: childEnv({}) });
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => {
      this.buf += chunk;
      for (let i = this.buf.indexOf("\n"); i !== -1; i = this.buf.indexOf("\n")) {
        const answer = JSON.parse(this.buf.slice(0, i));
        this.buf = this.buf.slice(i + 1);
        this.pending.get(answer.id)?.(answer);
        this.pending.delete(answer.id);
      }
    });
    let stderr = "";
    this.child.stderr.on("data", (d) => {
      stderr += d;
    });
    this.child.on("exit", (code) => {
      for (const resolve of this.pending.values())
        resolve({ code: code ?? 1, stdout: "", stderr: `forkserver exited (${code}): ${stderr}` });
      this.pending.clear();
    });
  }

  async run(inv: Invocation): Promise<string> {
    const shown = [inv.tool, ...inv.argv].join(" ");
    const id = this.next++;
    const answer = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ClientError(shown, "timeout", "", `no answer in ${COMMAND_TIMEOUT_MS} ms`));
      }, COMMAND_TIMEOUT_MS);
      this.pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.child.stdin.write(`${JSON.stringify({ id, ...inv })}\n`);
    });
    if (answer.code !== 0) throw new ClientError(shown, answer.code, answer.stdout, answer.stderr);
    return answer.stdout;
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

function parse(command: string, stdout: string): Json {
  try {
    return JSON.parse(stdout);
  } catch {
    throw new Error(`\`${command}\` printed no JSON:\n${stdout}`);
  }
}

/**
 * --os-compute-api-version for `openstack` and `nova`: novaclient parses the option and spells
 * "latest" as "2.latest" (a bare "latest" is its "Invalid format of client version").
 */
function versionArgs(version: string | undefined): string[] {
  if (!version) return [];
  return ["--os-compute-api-version", version === "latest" ? "2.latest" : version];
}

export async function startCloud(opts: RuntimeOptions = {}): Promise<Cloud> {
  // every command authenticates by password: the cheapest scrypt cost Keystone's option allows
  // (`[identity] password_hash_rounds`; a hash carries its own, so nothing else changes)
  process.env.NOVALESS_PASSWORD_HASH_ROUNDS ??= "10";
  const runtime = await startRuntime({ port: 0, hosts: 4, buildMs: 50, seedNetwork: true, ...opts });
  const dir = await mkdtemp(join(tmpdir(), "novaless-clients-"));
  const cloudsFile = join(dir, "clouds.yaml");
  await writeFile(cloudsFile, cloudsYaml(runtime.url));
  const added = new Map<string, string>();
  const env = childEnv({ OS_CLIENT_CONFIG_FILE: cloudsFile });
  const server = new ForkServer();
  const exec = (tool: Invocation["tool"], argv: string[], e: NodeJS.ProcessEnv) =>
    server.run({ tool, argv, env: e });

  const osArgs = (args: string[], o: CommandOptions) => [
    "--os-cloud",
    o.cloud ?? "admin",
    ...versionArgs(o.version),
    ...args,
    ...(o.json === false ? [] : ["-f", "json"]),
  ];

  const openstack = async (args: string[], o: CommandOptions = {}): Promise<Json> => {
    const full = osArgs(args, o);
    const out = await exec("openstack", full, env);
    return o.json === false ? out : parse(`openstack ${full.join(" ")}`, out);
  };

  const openstackFails = async (args: string[], o: CommandOptions = {}): Promise<ClientError> => {
    try {
      await exec("openstack", osArgs(args, o), env);
    } catch (e) {
      if (e instanceof ClientError) return e;
      throw e;
    }
    throw new Error(`openstack ${args.join(" ")} succeeded; it should have failed`);
  };

  // novaclient reads no clouds.yaml: it takes the same cloud as OS_* variables.
  const novaEnv = (cloud: CloudName) => {
    if (!(cloud === "admin" || cloud === "demo")) throw new Error("nova runs as the seeded users only here");
    return childEnv({
      OS_AUTH_URL: `${runtime.url}/identity/v3`,
      OS_USERNAME: cloud,
      OS_PASSWORD: PASSWORDS[cloud as "admin" | "demo"],
      OS_PROJECT_NAME: cloud,
      OS_USER_DOMAIN_NAME: "Default",
      OS_PROJECT_DOMAIN_NAME: "Default",
      OS_REGION_NAME: "RegionOne",
    });
  };

  const nova = (args: string[], o: CommandOptions = {}) =>
    exec("nova", [...versionArgs(o.version), ...args], novaEnv(o.cloud ?? "admin"));

  const sdk = async (operation: string, args: string[] = [], o: CommandOptions = {}) => {
    const full = [o.cloud ?? "admin", o.version ?? "2.1", operation, ...args];
    return parse(`python3 sdk_probe.py ${full.join(" ")}`, await exec("sdk", full, env));
  };

  return {
    runtime,
    url: runtime.url,
    dir,
    openstack,
    openstackFails,
    nova,
    sdk,
    async addCloud(name, auth, authType = "password") {
      // a name added again replaces its entry (a user's new password)
      added.set(name, cloudEntry(runtime.url, name, authType, auth));
      await writeFile(cloudsFile, cloudsYaml(runtime.url, undefined, [...added.values()]));
    },
    async stop() {
      server.stop();
      await runtime.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A name no other test in the run uses (the clouds share one runtime per file). */
export function unique(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
}
