// `npm start`: the whole of novaless on this machine. Ctrl-C stops everything.
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { log, setLogFormat } from "../lib/log.js";
import { startRuntime } from "./runtime.js";

// The SDK warns once that its releases after January 2027 need node 22: news for the maintainers
// (package.json's engines), not a fault of this start.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "8774" },
    hosts: { type: "string", default: "8" },
    "fail-hosts": { type: "string", default: "" },
    "build-ms": { type: "string", default: "1000" },
    "long-poll": { type: "boolean", default: false },
    driver: { type: "string", default: "fake" },
    "instances-path": { type: "string" },
    // unset: the runtime heartbeats at the configured report_interval (Nova's, 40 s by default)
    "heartbeat-seconds": { type: "string" },
    // human-readable lines on a terminal; JSON (as on Lambda) when the output is not a TTY
    "log-format": { type: "string" },
    // the functions and dynalite in this thread, not in worker threads of their own
    "one-thread": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  process.stdout.write(
    "usage: npm start -- [--port 8774] [--hosts 8 | --hosts compute-1.example.org,compute-2.example.org]\n" +
      "                    [--fail-hosts host-1,host-2] [--build-ms 1000] [--long-poll]\n" +
      "                    [--heartbeat-seconds report_interval] [--driver fake|exec|libvirt] [--instances-path DIR]\n" +
      "                    [--log-format human|json] [--one-thread]\n" +
      "hosts are simulated (event-driven, 10,000 on 2 cores); --long-poll runs one long-polling agent\n" +
      "per host instead, as novaless-compute does on a real host. --driver exec runs each server as a\n" +
      "real process (image sleeper), with long-polling agents. Logs: one line per event, readable on a\n" +
      "terminal, JSON when the output is not a TTY or with --log-format json; one build.finished line per build.\n" +
      "The functions (the Lambda handlers and the API) and dynalite each run in a worker thread of their\n" +
      "own, as on AWS they run apart; --one-thread runs everything in this thread, as the tests do.\n" +
      "--driver libvirt (as root) makes each host a network namespace with a libvirtd of its own and\n" +
      "runs each server as a QEMU virtual machine (KVM where /dev/kvm opens, else TCG), its port on\n" +
      "the bridge of `public` (physnet1); docs/compute-host.md says which Debian packages it needs.\n",
  );
  process.exit(0);
}

function int(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`--${name} must be an integer >= ${min}, got ${raw}\n`);
    process.exit(2);
  }
  return n;
}

/** A count (host-1 … host-N) or a comma list of host names. */
function hosts(raw: string): number | string[] {
  if (/^\d+$/.test(raw.trim())) return int("hosts", raw.trim(), 1);
  const names = raw
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  if (names.length === 0) {
    process.stderr.write(`--hosts must be a count or a comma list of host names, got ${raw}\n`);
    process.exit(2);
  }
  return names;
}

const logFormat = values["log-format"] ?? (process.stdout.isTTY ? "human" : "json");
if (logFormat !== "human" && logFormat !== "json") {
  process.stderr.write(`--log-format must be human or json, got ${logFormat}\n`);
  process.exit(2);
}
setLogFormat(logFormat);

if (values.driver !== "fake" && values.driver !== "exec" && values.driver !== "libvirt") {
  process.stderr.write(`--driver must be fake, exec or libvirt, got ${values.driver}\n`);
  process.exit(2);
}
const driver = values.driver;
const exec = driver === "exec";
const real = driver !== "fake";

const runtime = await startRuntime({
  seedNetwork: true,
  threads: !values["one-thread"],
  driver,
  ...(values["instances-path"] ? { instancesPath: values["instances-path"] } : {}),
  port: int("port", values.port, 0),
  hosts: hosts(values.hosts),
  failHosts: values["fail-hosts"].split(",").filter(Boolean),
  buildMs: int("build-ms", values["build-ms"], 0),
  // real processes and virtual machines: real agents (the simulator is for fleets of fake hosts)
  transport: values["long-poll"] || real ? "long-poll" : "simulated",
  heartbeatSeconds:
    values["heartbeat-seconds"] === undefined
      ? undefined
      : int("heartbeat-seconds", values["heartbeat-seconds"], 1),
});

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const seconds = (us: number) => (us / 1e6).toFixed(1);
const cpu = process.cpuUsage();
if (logFormat === "json") {
  // every line of a JSON run is JSON, the banner too
  log.info("runtime.up", {
    url: runtime.url,
    hosts: runtime.agents.length,
    tokens: ["admin-token", "demo-token"],
    ready_s: Number(seconds(performance.now() * 1000)),
    cpu_s: Number(seconds(cpu.user + cpu.system)),
    cores: availableParallelism(),
    rss_mib: Math.round(process.memoryUsage().rss / 2 ** 20),
  });
} else {
  process.stdout.write(
    `\nnovaless is up: ${runtime.url}  (${runtime.agents.length} hosts; tokens admin-token, demo-token)\n` +
      `ready in ${seconds(performance.now() * 1000)} s from process start (CPU ${seconds(cpu.user + cpu.system)} s ` +
      `on ${availableParallelism()} cores); RSS ${mib(process.memoryUsage().rss)}\n` +
      `try: curl -s ${runtime.url}/v2.1/flavors/detail -H 'X-Auth-Token: demo-token'\n` +
      (exec ? `servers of image sleeper are processes: ps -eo pid,args | grep 'sleep 2147483647'\n\n` : "") +
      (driver === "libvirt"
        ? `hosts are libvirt daemons in network namespaces (ip netns list); upload a guest image first:\n` +
          `  npm run image:build && openstack image create --disk-format qcow2 --container-format bare --file build/guest.qcow2 guest\n\n`
        : exec
          ? ""
          : "\n"),
  );
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  if (logFormat === "json") log.info("runtime.stopping", {});
  else process.stdout.write("stopping…\n");
  await runtime.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
