#!/usr/bin/env tsx
// `novaless-drain HOST`: cold-migrate every server off a compute host, as novaclient's
// host-servers-migrate does, for maintenance; with --live, live-migrate each running one, as its
// host-evacuate-live does (--fallback-cold: cold-migrate those that cannot go live). It disables
// the host's service first (unless --no-disable), waits for each migration and confirms a cold one
// (unless --no-confirm), and prints one line per server: migrated to X, failed: why, or skipped:
// why. Talks only to the Compute API, as an admin; the procedure is the console's own
// (console/src/drain.ts).
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DEFAULT_REASON, type DrainOutcome, type DrainRequest, drainHost } from "../console/src/drain.js";

const USAGE =
  "usage: novaless-drain HOST [--url URL] [--token TOKEN] [--concurrency N] [--no-confirm]\n" +
  "                      [--no-disable] [--reason TEXT] [--timeout S] [--live [--fallback-cold]]\n" +
  "  --url          the API's root (default: NOVALESS_URL, else http://127.0.0.1:8774)\n" +
  "  --token        an admin's token (default: OS_TOKEN; else a password token from OS_USERNAME,\n" +
  "                 OS_PASSWORD, OS_PROJECT_NAME at OS_AUTH_URL, default <url>/identity/v3)\n" +
  "  --concurrency  servers migrated at once (default 2)\n" +
  "  --no-confirm   leave each migration in VERIFY_RESIZE instead of confirming it\n" +
  "  --no-disable   leave the host's compute service as it is (by default it is disabled first,\n" +
  `                 reason --reason, default "${DEFAULT_REASON}")\n` +
  "  --timeout      seconds each server may take to move and be confirmed (default 600)\n" +
  "  --live         live-migrate each ACTIVE server instead (host-evacuate-live): it keeps running;\n" +
  "                 the scheduler picks its host; one that cannot go live (stopped, or its host's\n" +
  "                 driver cannot: exec) is skipped\n" +
  "  --fallback-cold  with --live: cold-migrate (and confirm) the servers that cannot go live\n" +
  "exit codes: 0 every server left the host, 1 some did not (or an error), 2 invalid input\n";

/** OpenStack's error bodies: {"badRequest": {"message": …}} (Compute), {"error": {…}} (Keystone). */
export async function apiMessage(res: Response): Promise<string> {
  const text = await res.text();
  try {
    const first = Object.values(JSON.parse(text) as Record<string, { message?: string }>)[0];
    if (first?.message) return first.message;
  } catch {
    // not JSON
  }
  return text || `${res.status} ${res.statusText}`;
}

/**
 * The Compute API at `url` as `token`, at 2.96 (the console's version: services by uuid, 2.53+)
 * unless a call names its own.
 */
export function computeRequest(url: string, token: string): DrainRequest {
  return async <T>(method: string, path: string, body?: unknown, microversion?: string) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        accept: "application/json",
        "x-auth-token": token,
        "openstack-api-version": `compute ${microversion ?? "2.96"}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(await apiMessage(res));
    const text = await res.text();
    return {
      body: (text ? JSON.parse(text) : {}) as T,
      requestId: res.headers.get("x-openstack-request-id"),
    };
  };
}

/** Keystone's password method, as the openstack CLI reads it from the environment. */
async function passwordToken(url: string): Promise<string | undefined> {
  const { OS_USERNAME: user, OS_PASSWORD: password } = process.env;
  if (!user || !password) return undefined;
  const authUrl = (process.env.OS_AUTH_URL ?? `${url}/identity`).replace(/\/+$/, "").replace(/\/v3$/, "");
  const domain = { name: process.env.OS_USER_DOMAIN_NAME ?? "Default" };
  const res = await fetch(`${authUrl}/v3/auth/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      auth: {
        identity: { methods: ["password"], password: { user: { name: user, domain, password } } },
        scope: {
          project: {
            name: process.env.OS_PROJECT_NAME ?? user,
            domain: { name: process.env.OS_PROJECT_DOMAIN_NAME ?? "Default" },
          },
        },
      },
    }),
  });
  if (!res.ok) throw new Error(await apiMessage(res));
  return res.headers.get("x-subject-token") ?? undefined;
}

/** One server's line: id, name, outcome. */
export function outcomeLine(o: DrainOutcome): string {
  const what =
    o.state === "migrated"
      ? `migrated to ${o.host}${o.detail ? ` (${o.detail})` : ""}`
      : o.state === "failed" || o.state === "skipped"
        ? `${o.state}: ${o.detail}`
        : o.state;
  return `${o.id}  ${o.name}  ${what}`;
}

/** The last line: how many moved (live and cold, in a live drain), failed, skipped; what is left. */
export function summaryLine(
  host: string,
  outcomes: DrainOutcome[],
  remaining: number,
  live: boolean,
): string {
  const count = (f: (o: DrainOutcome) => boolean) => outcomes.filter(f).length;
  const migrated = count((o) => o.state === "migrated");
  const how = live
    ? ` (${count((o) => o.state === "migrated" && o.how === "live")} live, ${count((o) => o.state === "migrated" && o.how === "cold")} cold)`
    : "";
  return (
    `${host}: ${migrated} of ${outcomes.length} server(s) migrated${how}, ${count((o) => o.state === "failed")} failed, ` +
    `${count((o) => o.state === "skipped")} skipped; ${remaining ? `${remaining} still on ${host}` : `${host} is empty`}`
  );
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  const parse = () =>
    parseArgs({
      allowPositionals: true,
      allowNegative: true,
      options: {
        url: { type: "string" },
        token: { type: "string" },
        concurrency: { type: "string", default: "2" },
        confirm: { type: "boolean", default: true },
        disable: { type: "boolean", default: true },
        reason: { type: "string" },
        timeout: { type: "string", default: "600" },
        live: { type: "boolean", default: false },
        "fallback-cold": { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
      },
    });
  try {
    parsed = parse();
  } catch (e) {
    process.stderr.write(`novaless-drain: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const concurrency = Number(v.concurrency);
  const timeout = Number(v.timeout);
  const bad =
    positionals.length !== 1
      ? "name one host"
      : !Number.isInteger(concurrency) || concurrency < 1
        ? `--concurrency ${v.concurrency} is not a positive integer`
        : !(timeout > 0)
          ? `--timeout ${v.timeout} is not a number of seconds`
          : v["fallback-cold"] && !v.live
            ? "--fallback-cold goes with --live"
            : undefined;
  if (bad) {
    process.stderr.write(`novaless-drain: ${bad}\n${USAGE}`);
    return 2;
  }
  const host = positionals[0]!;
  const url = (v.url || process.env.NOVALESS_URL || "http://127.0.0.1:8774").replace(/\/+$/, "");

  try {
    const token = v.token || process.env.OS_TOKEN || (await passwordToken(url));
    if (!token) {
      process.stderr.write(`novaless-drain: no token: give --token, OS_TOKEN, or OS_USERNAME/OS_PASSWORD\n`);
      return 2;
    }
    const say = (line: string) => process.stdout.write(`${line}\n`);
    const r = await drainHost(computeRequest(url, token), {
      host,
      concurrency,
      confirm: v.confirm,
      disable: v.disable,
      ...(v.reason ? { disabledReason: v.reason } : {}),
      timeoutMs: timeout * 1000,
      live: v.live,
      fallbackCold: v["fallback-cold"],
      onNote: say,
      onUpdate: (o) => {
        if (o.state === "migrated" || o.state === "failed" || o.state === "skipped") say(outcomeLine(o));
      },
    });
    say(summaryLine(host, r.outcomes, r.remaining, v.live));
    return r.ok ? 0 : 1;
  } catch (e) {
    process.stderr.write(`novaless-drain: ${(e as Error).message}\n`);
    return 1;
  }
}

// Run as the command, not when a test imports the line format.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main();
}
