// examples/ansible/server.yml, the openstack.cloud modules' playbook, against a whole local
// novaless: Debian's ansible-playbook runs it as an operator would (its ansible.cfg, inventory and
// clouds.yaml, the port changed), with the collection and openstacksdk that
// scripts/ansible/install.sh puts in .ansible/. It runs, runs again changing nothing, then
// `--tags teardown` deletes all of it, and the API shows nothing left.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Runtime, startRuntime } from "../../local/runtime.js";
import { ADMIN, Client } from "../e2e/harness.js";

vi.setConfig({ testTimeout: 300_000 });

const FILE = "test/clients/ansible.test.ts";
const top = fileURLToPath(new URL("../../", import.meta.url));
const example = join(top, "examples/ansible");

/** Why the playbook cannot run here, or undefined. */
function unavailable(): string | undefined {
  if (spawnSync("sh", ["-c", "command -v ansible-playbook"], { stdio: "ignore" }).status !== 0)
    return "ansible-playbook is not installed (Debian's ansible-core: scripts/install-test-tools.sh)";
  if (!existsSync(join(top, ".ansible/ready")))
    return "the openstack.cloud collection and its openstacksdk are not in .ansible/ (scripts/ansible/install.sh)";
  return undefined;
}

const why = unavailable();
if (why) console.warn(`${FILE}: ${why}: ${process.env.CI ? "CI is set, so this fails" : "its tests skip"}`);

/** One host's line of the PLAY RECAP: ok=8 changed=2 unreachable=0 failed=0 … */
type Recap = Record<string, Record<string, number>>;

interface Run {
  code: number | null;
  output: string;
  recap: Recap;
}

function recapOf(output: string): Recap {
  const recap: Recap = {};
  const at = output.lastIndexOf("PLAY RECAP");
  if (at === -1) return recap;
  for (const line of output.slice(at).split("\n").slice(1)) {
    const [, host, counts] = /^(\S+)\s+:\s+(.*)$/.exec(line.trim()) ?? [];
    if (!host || !counts) continue;
    recap[host] = Object.fromEntries([...counts.matchAll(/(\w+)=(\d+)/g)].map(([, k, v]) => [k, Number(v)]));
  }
  return recap;
}

/** Each failed task's name and what the module said (Ansible prints them apart). */
function failures(output: string): string[] {
  const found: string[] = [];
  let task = "";
  for (const line of output.split("\n")) {
    task = /^TASK \[(.*)\]/.exec(line)?.[1] ?? task;
    const [, result] = /^fatal: \[[^\]]+\]: FAILED! => (.*)$/.exec(line) ?? [];
    if (result === undefined) continue;
    let msg = result;
    try {
      msg = JSON.parse(result).msg ?? msg;
    } catch {
      // not JSON: the line as Ansible printed it
    }
    found.push(`task "${task}": ${msg}`);
  }
  return found;
}

describe.skipIf(Boolean(why) && !process.env.CI)(
  "examples/ansible: the openstack.cloud modules' playbook",
  () => {
    let runtime: Runtime;
    let dir: string;
    let admin: Client;

    beforeAll(async () => {
      if (why) throw new Error(`${FILE}: ${why}`);
      // the playbook's modules each sign in by password: Keystone's cheapest scrypt cost
      process.env.NOVALESS_PASSWORD_HASH_ROUNDS ??= "10";
      runtime = await startRuntime({ port: 0, hosts: 2, buildMs: 50, seedNetwork: true });
      admin = new Client(runtime.url, ADMIN, "2.10");
      dir = await mkdtemp(join(tmpdir(), "novaless-ansible-"));
      // the example's own clouds.yaml, pointed at this runtime
      const clouds = await readFile(join(example, "clouds.yaml"), "utf8");
      expect(clouds).toContain("http://127.0.0.1:8774/identity");
      await writeFile(join(dir, "clouds.yaml"), clouds.replaceAll("http://127.0.0.1:8774", runtime.url));
    });

    afterAll(async () => {
      await runtime?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    /** `ansible-playbook server.yml args…` in examples/ansible, as its README says. */
    function playbook(args: string[]): Promise<Run> {
      const env: NodeJS.ProcessEnv = {};
      // none of an operator's OS_* or ANSIBLE_* settings: only the example's
      for (const [k, v] of Object.entries(process.env)) if (!/^(OS_|ANSIBLE_)/.test(k)) env[k] = v;
      Object.assign(env, {
        OS_CLIENT_CONFIG_FILE: join(dir, "clouds.yaml"),
        ANSIBLE_CONFIG: join(example, "ansible.cfg"),
        ANSIBLE_NOCOLOR: "1",
        ANSIBLE_LOCAL_TEMP: join(dir, "tmp"),
        ANSIBLE_REMOTE_TEMP: join(dir, "tmp"),
        PYTHONWARNINGS: "ignore",
      });
      return new Promise((resolve, reject) => {
        const child = spawn("ansible-playbook", ["server.yml", ...args], { cwd: example, env });
        let output = "";
        child.stdout.on("data", (d) => {
          output += d;
        });
        child.stderr.on("data", (d) => {
          output += d;
        });
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, output, recap: recapOf(output) }));
      });
    }

    /** The run succeeded, or an error naming each failed task and what its module said. */
    function succeeded(what: string, run: Run): void {
      if (run.code === 0) return;
      const failed = failures(run.output);
      throw new Error(
        `${what}: ansible-playbook exited ${run.code}\n${failed.length ? failed.join("\n") : run.output.slice(-3000)}`,
      );
    }

    it("runs, then runs again changing nothing, then --tags teardown deletes all of it", async () => {
      const first = await playbook([]);
      succeeded("the first run", first);
      expect(first.recap.localhost).toMatchObject({ failed: 0, unreachable: 0 });
      expect(first.recap.localhost?.changed).toBeGreaterThan(0);

      const second = await playbook([]);
      succeeded("the second run", second);
      expect(Object.keys(second.recap)).toEqual(["localhost"]);
      for (const [host, counts] of Object.entries(second.recap))
        expect({ host, ...counts }).toMatchObject({ host, changed: 0, failed: 0, unreachable: 0 });

      // what the playbook made, read through the API before it goes
      const [projects, users] = await Promise.all([
        admin.get("/identity/v3/projects?name=ansible-demo"),
        admin.get("/identity/v3/users?name=ansible-demo"),
      ]);
      expect(projects.body.projects).toHaveLength(1);
      expect(users.body.users).toHaveLength(1);
      const project = projects.body.projects[0].id;
      const user = users.body.users[0].id;
      const servers = await admin.get(`/v2.1/servers/detail?all_tenants=1&project_id=${project}`);
      expect(servers.body.servers.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
        ["ansible-demo-1", "SHUTOFF"],
      ]);
      const server = servers.body.servers[0].id;
      const ports = await admin.get(`/networking/v2.0/ports?device_id=${server}`);
      expect(ports.body.ports).toHaveLength(1);
      // the group, its two ingress rules, and the server's port in it alone
      const groupsMade = await admin.get(
        `/networking/v2.0/security-groups?project_id=${project}&name=ansible-demo-ssh`,
      );
      expect(groupsMade.body.security_groups).toHaveLength(1);
      const group = groupsMade.body.security_groups[0];
      const ingress = group.security_group_rules
        .filter((r: { direction: string }) => r.direction === "ingress")
        .map((r: Record<string, unknown>) => [
          r.protocol,
          r.port_range_min,
          r.port_range_max,
          r.remote_ip_prefix,
        ]);
      expect(ingress.sort()).toEqual([
        ["icmp", null, null, "0.0.0.0/0"],
        ["tcp", 22, 22, "0.0.0.0/0"],
      ]);
      expect(ports.body.ports[0].security_groups).toEqual([group.id]);
      expect((await admin.get(`/v2.1/os-keypairs?user_id=${user}`)).body.keypairs).toHaveLength(1);

      const teardown = await playbook(["--tags", "teardown"]);
      succeeded("the teardown", teardown);
      expect(teardown.recap.localhost).toMatchObject({ failed: 0, unreachable: 0 });

      const status = (path: string) => admin.get(path).then((r) => r.status);
      const list = (path: string, key: string) => admin.get(path).then((r) => r.body[key]);
      const [serverStatus, serverPorts, projectPorts, groups, keypairs, projectStatus, userStatus] =
        await Promise.all([
          status(`/v2.1/servers/${server}`),
          list(`/networking/v2.0/ports?device_id=${server}`, "ports"),
          list(`/networking/v2.0/ports?project_id=${project}`, "ports"),
          list(
            `/networking/v2.0/security-groups?project_id=${project}&name=ansible-demo-ssh`,
            "security_groups",
          ),
          list(`/v2.1/os-keypairs?user_id=${user}`, "keypairs"),
          status(`/identity/v3/projects/${project}`),
          status(`/identity/v3/users/${user}`),
        ]);
      expect({
        serverStatus,
        serverPorts,
        projectPorts,
        groups,
        keypairs,
        projectStatus,
        userStatus,
      }).toEqual({
        serverStatus: 404,
        serverPorts: [],
        projectPorts: [],
        groups: [],
        keypairs: [],
        projectStatus: 404,
        userStatus: 404,
      });
    });
  },
);
