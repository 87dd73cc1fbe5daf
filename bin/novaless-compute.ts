// `novaless-compute`: run one compute agent (fake driver) against whatever AWS the environment
// points at: the deployed stack's tables and queues (see the stack outputs) or LocalStack. The
// host's queue is named from NOVALESS_COMPUTE_QUEUE_PREFIX (the stack output ComputeQueuePrefix;
// unset, the default stack's) and the host name, see lib/compute/queue-name.ts.
import { parseArgs } from "node:util";
import { ComputeAgent } from "../lib/compute/agent.js";
import { FakeDriver } from "../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../lib/compute/inventory.js";
import { computeQueueName } from "../lib/compute/queue-name.js";
import { DEFAULT_COMPUTE_QUEUE_PREFIX, resources } from "../lib/config.js";
import { DLQ_SUFFIX } from "../lib/resources.js";

const { values } = parseArgs({
  options: {
    host: { type: "string" },
    "availability-zone": { type: "string", default: "nova" },
    "host-ip": { type: "string", default: "127.0.0.1" },
    vcpus: { type: "string", default: "16" },
    "memory-mb": { type: "string", default: "65536" },
    "local-gb": { type: "string", default: "1000" },
    "build-ms": { type: "string", default: "1000" },
    "fail-builds": { type: "boolean", default: false },
  },
});

const required = [
  "NOVALESS_HOSTS_TABLE",
  "NOVALESS_ALLOCATIONS_TABLE",
  "NOVALESS_SERVICES_TABLE",
  "NOVALESS_INSTANCES_TABLE",
  "NOVALESS_BUILD_REQUESTS_QUEUE_URL",
];
const missing = required.filter((k) => !process.env[k]);
if (!values.host || missing.length) {
  process.stderr.write(
    "usage: novaless-compute --host NAME [--availability-zone AZ] [--vcpus N] [--memory-mb N] [--local-gb N]\n" +
      "                        [--build-ms N] [--fail-builds]\n" +
      `environment needed: ${required.join(", ")} (stack outputs)\n` +
      `optional: NOVALESS_COMPUTE_QUEUE_PREFIX (stack output ComputeQueuePrefix; default ${DEFAULT_COMPUTE_QUEUE_PREFIX})\n` +
      (missing.length ? `missing: ${missing.join(", ")}\n` : ""),
  );
  process.exit(2);
}

const int = (v: string, name: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
};
const host = values.host;
// Refuse a host name or prefix that cannot make a queue before touching any AWS resource.
const queueName = computeQueueName(resources().computeQueuePrefix, host, DLQ_SUFFIX);
const agent = new ComputeAgent({
  host,
  availability_zone: values["availability-zone"],
  host_ip: values["host-ip"],
  inventories: inventoriesFor({
    vcpus: int(values.vcpus, "vcpus"),
    memory_mb: int(values["memory-mb"], "memory-mb"),
    local_gb: int(values["local-gb"], "local-gb"),
  }),
  driver: new FakeDriver({
    host,
    buildMs: int(values["build-ms"], "build-ms"),
    failAll: values["fail-builds"],
  }),
});
await agent.start();
process.stdout.write(`compute host ${host}: queue ${queueName}\n`);
const stop = async () => {
  await agent.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
