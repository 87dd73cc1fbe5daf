// `npm start`: the whole of novaless on this machine. Ctrl-C stops everything.
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startRuntime } from "./runtime.js";

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
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  process.stdout.write(
    "usage: npm start -- [--port 8774] [--hosts 8 | --hosts compute-1.example.org,compute-2.example.org]\n" +
      "                    [--fail-hosts host-1,host-2] [--build-ms 1000] [--long-poll]\n" +
      "                    [--heartbeat-seconds report_interval] [--driver fake|exec] [--instances-path DIR]\n" +
      "hosts are simulated (event-driven, 10,000 on 2 cores); --long-poll runs one long-polling agent\n" +
      "per host instead, as novaless-compute does on a real host. --driver exec runs each server as a\n" +
      "real process (image sleeper), with long-polling agents\n",
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

if (values.driver !== "fake" && values.driver !== "exec") {
  process.stderr.write(`--driver must be fake or exec, got ${values.driver}\n`);
  process.exit(2);
}
const exec = values.driver === "exec";

const runtime = await startRuntime({
  driver: exec ? "exec" : "fake",
  ...(values["instances-path"] ? { instancesPath: values["instances-path"] } : {}),
  port: int("port", values.port, 0),
  hosts: hosts(values.hosts),
  failHosts: values["fail-hosts"].split(",").filter(Boolean),
  buildMs: int("build-ms", values["build-ms"], 0),
  // real processes: real agents (the simulator is for fleets of fake hosts)
  transport: values["long-poll"] || exec ? "long-poll" : "simulated",
  heartbeatSeconds:
    values["heartbeat-seconds"] === undefined
      ? undefined
      : int("heartbeat-seconds", values["heartbeat-seconds"], 1),
});

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const seconds = (us: number) => (us / 1e6).toFixed(1);
const cpu = process.cpuUsage();
process.stdout.write(
  `\nnovaless is up: ${runtime.url}  (${runtime.agents.length} hosts; tokens admin-token, demo-token)\n` +
    `ready in ${seconds(performance.now() * 1000)} s from process start (CPU ${seconds(cpu.user + cpu.system)} s ` +
    `on ${availableParallelism()} cores); RSS ${mib(process.memoryUsage().rss)}\n` +
    `try: curl -s ${runtime.url}/v2.1/flavors/detail -H 'X-Auth-Token: demo-token'\n` +
    (exec ? `servers of image sleeper are processes: ps -eo pid,args | grep 'sleep 2147483647'\n\n` : "\n"),
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  process.stdout.write("stopping…\n");
  await runtime.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
