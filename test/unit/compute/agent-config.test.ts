import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  DEFAULT_CONFIG_FILE,
  exampleConf,
  helpText,
  type LoadOptions,
  loadAgentConfig,
} from "../../../lib/compute/agent-config.js";
import { hostSizeOf } from "../../../lib/compute/discover.js";
import { inventoriesFor } from "../../../lib/compute/inventory.js";
import { AGENT_OPTIONS, OPTIONS } from "../../../lib/config.js";

const OUTPUTS = JSON.stringify({
  Novaless: {
    ComputeEventsUrl: "https://abcdefghij0123456789klmnopqrstuv.lambda-url.eu-west-1.on.aws/",
    ComputeQueuePrefix: "novaless-compute-",
    ComputeHostRoleArn: "arn:aws:iam::111122223333:role/Novaless-ComputeHostRole",
    Region: "eu-west-1",
    ApiUrl: "https://example.execute-api.eu-west-1.amazonaws.com/",
  },
});

function load(over: Partial<LoadOptions> & { files?: Record<string, string> } = {}) {
  const files = over.files ?? {};
  return loadAgentConfig({
    argv: over.argv ?? [],
    env: over.env ?? {},
    readFile: (p) => files[p],
    machine: over.machine ?? { fqdn: "cn-01.rack4.example.net", ip: "10.0.4.1" },
  });
}

const errorOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("no error");
};

describe("novaless-compute's configuration", () => {
  it("takes the stack's values from `cdk deploy --outputs-file` and the host from the FQDN", () => {
    const { config } = load({ argv: ["--stack-outputs", "out.json"], files: { "out.json": OUTPUTS } });
    expect(config.DEFAULT.host).toBe("cn-01.rack4.example.net");
    expect(config.DEFAULT.my_ip).toBe("10.0.4.1");
    expect(config.DEFAULT.compute_driver).toBe("exec");
    expect(config.novaless).toMatchObject({
      events_url: "https://abcdefghij0123456789klmnopqrstuv.lambda-url.eu-west-1.on.aws/",
      compute_queue_prefix: "novaless-compute-",
      assume_role_arn: "arn:aws:iam::111122223333:role/Novaless-ComputeHostRole",
      region: "eu-west-1",
      wait_time_seconds: 20,
    });
    expect(config.libvirt.images_path).toBe("/var/lib/novaless/instances/_base");
    // when an idle heartbeat is due (lib/compute/heartbeat.ts): the control plane's default
    expect(config.DEFAULT).toMatchObject({ report_interval: 10, service_down_time: 120 });
  });

  it("reads every option the table marks for the agent (none is left out of compute.conf)", () => {
    const names = (rows: readonly { group: string; name: string }[]) =>
      rows.map((o) => `[${o.group}] ${o.name}`).sort();
    expect(names(AGENT_OPTIONS)).toEqual(names(OPTIONS.filter((x) => x.agent)));
  });

  it("applies defaults < stack outputs < file < environment < flags", () => {
    const conf = [
      "[DEFAULT]",
      "host = from-file",
      "compute_driver = libvirt",
      "reserved_host_memory_mb = 4096",
      "cpu_allocation_ratio = 4.0",
      "instances_path = /srv/instances",
      "[libvirt]",
      "connection_uri = qemu+ssh://from-file/system",
      "[novaless]",
      "compute_queue_prefix = from-file-",
      "concurrency = 2",
      "[fake]",
      "fail_builds = true",
    ].join("\n");
    const { config } = load({
      argv: [
        "--stack-outputs=out.json",
        "--libvirt-uri",
        "test:///default",
        "--set",
        "novaless.concurrency=3",
      ],
      env: { NOVALESS_DEFAULT_HOST: "from-env", NOVALESS_DEFAULT_RESERVED_HOST_MEMORY_MB: "1024" },
      files: { "out.json": OUTPUTS, [DEFAULT_CONFIG_FILE]: conf },
    });
    expect(config.DEFAULT).toMatchObject({
      host: "from-env",
      compute_driver: "libvirt",
      reserved_host_memory_mb: 1024,
      cpu_allocation_ratio: 4,
      instances_path: "/srv/instances",
    });
    expect(config.libvirt.connection_uri).toBe("test:///default");
    // images_path follows instances_path when unset
    expect(config.libvirt.images_path).toBe("/srv/instances/_base");
    expect(config.novaless.compute_queue_prefix).toBe("from-file-");
    expect(config.novaless.events_url).toContain("lambda-url");
    expect(config.novaless.concurrency).toBe(3);
    expect(config.fake.fail_builds).toBe(true);
    // a flag beats the environment
    expect(
      load({
        argv: ["--host", "from-flag", "--stack-outputs", "o"],
        env: { NOVALESS_DEFAULT_HOST: "from-env" },
        files: { o: OUTPUTS },
      }).config.DEFAULT.host,
    ).toBe("from-flag");
  });

  it("reads keys before any section as [DEFAULT], as nova.conf does", () => {
    const { config } = load({
      argv: ["--config-file", "c.conf"],
      files: { "c.conf": "host = top\n[novaless]\nevents_url = q\ncompute_queue_prefix = p-\n" },
    });
    expect(config.DEFAULT.host).toBe("top");
  });

  it("says what is wrong, where", () => {
    expect(errorOf(() => load())).toMatch(
      /\[novaless\] events_url is required: .*NOVALESS_NOVALESS_EVENTS_URL.*--stack-outputs/,
    );
    const files = { "out.json": OUTPUTS };
    expect(errorOf(() => load({ argv: ["--stack-outputs", "nope.json"], files }))).toBe(
      "--stack-outputs nope.json: no such file",
    );
    expect(errorOf(() => load({ argv: ["--config-file", "nope.conf"], files }))).toBe(
      "--config-file nope.conf: no such file",
    );
    expect(
      errorOf(() =>
        load({
          argv: ["--stack-outputs", "two.json"],
          files: { "two.json": JSON.stringify({ A: {}, B: {} }) },
        }),
      ),
    ).toBe("--stack-outputs two.json holds A, B: name one with --stack");
    const withConf = (conf: string) => ({
      argv: ["--stack-outputs", "out.json"],
      files: { ...files, [DEFAULT_CONFIG_FILE]: conf },
    });
    expect(errorOf(() => load(withConf("[DEFAULT]\nreserved_host_cpus = two\n")))).toBe(
      `[DEFAULT] reserved_host_cpus = "two" (${DEFAULT_CONFIG_FILE}) is not a valid int`,
    );
    expect(errorOf(() => load(withConf("[DEFAULT]\ncompute_driver = xen\n")))).toMatch(
      /compute_driver = "xen" .* must be one of exec, libvirt, fake/,
    );
    expect(errorOf(() => load(withConf("[DEFAULT]\nscheduler_driver = x\n")))).toBe(
      `${DEFAULT_CONFIG_FILE}: unknown option scheduler_driver in [DEFAULT]`,
    );
    expect(errorOf(() => load(withConf("[vnc]\nenabled = true\n")))).toBe(
      `${DEFAULT_CONFIG_FILE}: unknown section [vnc]`,
    );
    expect(errorOf(() => load(withConf("[novaless]\nwait_time_seconds = 30\n")))).toBe(
      "[novaless] wait_time_seconds must be 1-20 (SQS), got 30",
    );
    expect(errorOf(() => load({ argv: ["--hots", "x"] }))).toBe("unknown argument --hots (see --help)");
    expect(errorOf(() => load({ argv: ["--host"] }))).toBe("--host needs a value");
    expect(errorOf(() => load({ argv: ["--set", "nova.x=1"] }))).toMatch(/--set nova.x=1: expected/);
    expect(
      errorOf(() =>
        load({ argv: ["--stack-outputs", "out.json"], files, env: { NOVALESS_NOVALESS_CONCURRENCY: "-x" } }),
      ),
    ).toBe('[novaless] concurrency = "-x" (NOVALESS_NOVALESS_CONCURRENCY) is not a valid int');
  });

  it("answers --help with every option", () => {
    expect(load({ argv: ["--help"] }).help).toBe(true);
    const help = helpText();
    for (const key of [
      "host",
      "compute_driver",
      "reserved_host_disk_mb",
      "connection_uri",
      "assume_role_arn",
    ])
      expect(help).toContain(`] ${key}`);
    expect(help).toContain("[libvirt] connection_uri (--libvirt-uri)");
  });

  it("ships packaging/compute.conf.example as generated, and it parses", () => {
    const example = readFileSync(new URL("../../../packaging/compute.conf.example", import.meta.url), "utf8");
    expect(example).toBe(exampleConf());
    // uncommenting every literal default gives a file that loads to the same values
    const uncommented = example.replace(/^#(\w+ = .*)$/gm, "$1");
    const { config } = load({
      argv: ["--stack-outputs", "out.json"],
      files: { "out.json": OUTPUTS, [DEFAULT_CONFIG_FILE]: uncommented },
    });
    expect(config.DEFAULT.report_interval).toBe(10);
    expect(config.fake.fail_builds).toBe(false);
  });
});

describe("inventory discovered from the machine", () => {
  it("is the machine's CPUs, memory and the instances path's disk, less what is reserved, at the ratios", () => {
    const { config } = load({
      argv: ["--stack-outputs", "out.json"],
      files: {
        "out.json": OUTPUTS,
        [DEFAULT_CONFIG_FILE]:
          "[DEFAULT]\nreserved_host_cpus = 2\nreserved_host_disk_mb = 20480\nram_allocation_ratio = 1.0\n",
      },
    });
    const size = hostSizeOf({ cpus: 32, memoryBytes: 128 * 2 ** 30, diskBytes: 2000 * 2 ** 30 + 5 }, config);
    expect(size).toMatchObject({ vcpus: 32, memory_mb: 131072, local_gb: 2000, reserved_host_cpus: 2 });
    const inv = inventoriesFor(size);
    expect(inv.VCPU).toMatchObject({ total: 32, reserved: 2, allocation_ratio: 16 });
    expect(inv.MEMORY_MB).toMatchObject({ total: 131072, reserved: 512, allocation_ratio: 1 });
    expect(inv.DISK_GB).toMatchObject({ total: 2000, reserved: 20, allocation_ratio: 1 });
  });
});
