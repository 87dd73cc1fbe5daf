// `novaless-compute`: the compute service an operator installs on a hypervisor (Nova's
// nova-compute). Shipped as one file (`npm run bundle:agent` → dist/novaless-compute.mjs) with a
// systemd unit (packaging/). It reads /etc/novaless/compute.conf (or --config-file, the stack's
// outputs with --stack-outputs, NOVALESS_<SECTION>_<KEY>, flags: lib/compute/agent-config.ts),
// discovers the machine's inventory, and runs the agent: its own queue in, reports to
// compute-events out, no database.
import { readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { fromTemporaryCredentials } from "@aws-sdk/credential-providers";
import { useDefaultCredentials } from "../lib/aws/clients.js";
import { ComputeAgent } from "../lib/compute/agent.js";
import { ConfigError, helpText, loadAgentConfig } from "../lib/compute/agent-config.js";
import { hostSizeOf, machineFacts } from "../lib/compute/discover.js";
import { createDriver } from "../lib/compute/drivers/index.js";
import { inventoriesFor } from "../lib/compute/inventory.js";
import { fqdn } from "../lib/compute/machine.js";
import { computeQueueName, hostSessionName } from "../lib/compute/queue-name.js";
import { DiskSpoolStore } from "../lib/compute/spool.js";
import { logger } from "../lib/log.js";
import { DLQ_SUFFIX, HOST_TAG } from "../lib/resources.js";

function firstIpv4(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return "127.0.0.1";
}

let loaded: ReturnType<typeof loadAgentConfig>;
try {
  loaded = loadAgentConfig({
    argv: process.argv.slice(2),
    env: process.env,
    readFile: (p) => {
      try {
        return readFileSync(p, "utf8");
      } catch {
        return undefined;
      }
    },
    machine: { fqdn: await fqdn(), ip: firstIpv4() },
  });
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`novaless-compute: ${e.message}\n`);
  process.exit(2);
}
if (loaded.help) {
  process.stdout.write(helpText());
  process.exit(0);
}
const c = loaded.config;
const host = String(c.DEFAULT.host);
const log = logger({ host });
if (c.novaless.region) process.env.AWS_REGION ??= String(c.novaless.region);
if (c.novaless.assume_role_arn) {
  // The host's session of ComputeHostRole: named and tagged after the host, as its trust
  // policy demands of whoever takes it (an instance-profile role tagged novaless-host, or a
  // Roles Anywhere certificate whose CN is the host).
  const session = hostSessionName(host);
  useDefaultCredentials(
    fromTemporaryCredentials({
      params: {
        RoleArn: String(c.novaless.assume_role_arn),
        RoleSessionName: session,
        Tags: [{ Key: HOST_TAG, Value: session }],
      },
    }),
  );
}

const prefix = String(c.novaless.compute_queue_prefix);
// a host name or prefix that cannot make a queue is refused before anything is sent
const queue = computeQueueName(prefix, host, DLQ_SUFFIX);
const driver = createDriver(c);
// the hypervisor's view of the host where the driver has one (libvirt: nodeinfo), else the machine's
const facts = driver.machineFacts
  ? await driver.machineFacts()
  : machineFacts(String(c.DEFAULT.instances_path));
const size = hostSizeOf(facts, c);
const agent = new ComputeAgent({
  host,
  availability_zone: String(c.DEFAULT.default_availability_zone),
  host_ip: String(c.DEFAULT.my_ip),
  inventories: inventoriesFor(size),
  driver,
  eventsUrl: String(c.novaless.events_url),
  computeQueuePrefix: prefix,
  concurrency: Number(c.novaless.concurrency),
  waitTimeSeconds: Number(c.novaless.wait_time_seconds),
  heartbeatSeconds: Number(c.DEFAULT.report_interval),
  serviceDownTimeSeconds: Number(c.DEFAULT.service_down_time),
  syncPowerStateSeconds: Number(c.DEFAULT.sync_power_state_interval),
  deadLetterCheckSeconds: Number(c.novaless.dead_letter_check_interval),
  // reports wait on disk until applied, whatever happens to this process
  spool: new DiskSpoolStore(String(c.novaless.report_spool_path), log),
  log,
});

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) {
    // a second signal: now
    process.exit(1);
  }
  stopping = true;
  // takes no more casts, hands back what it was building, and leaves unsent reports in the spool
  // (a few seconds at most: within the unit's TimeoutStopSec)
  await agent.stop({ handBack: true, signal });
  await driver.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop("SIGINT"));
process.on("SIGTERM", () => void stop("SIGTERM"));

try {
  await agent.start();
} catch (e) {
  // what the operator must check: the identity the agent presented
  const as = c.novaless.assume_role_arn
    ? ` (as session ${hostSessionName(host)} of ${String(c.novaless.assume_role_arn)}, tag ${HOST_TAG}=${hostSessionName(host)})`
    : "";
  process.stderr.write(`novaless-compute ${host}: ${(e as Error).name}: ${(e as Error).message}${as}\n`);
  await driver.close().catch(() => undefined);
  process.exit(1);
}
process.stdout.write(
  `novaless-compute ${host}: driver ${driver.hypervisorType}, ${size.vcpus} vCPU, ${size.memory_mb} MiB, ` +
    `${size.local_gb} GiB, queue ${queue}, session ${hostSessionName(host)}\n`,
);
