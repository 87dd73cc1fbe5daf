// Structured logs through Powertools for AWS Lambda's Logger: one JSON object per line, always
// with the event name, and with request_id and instance_uuid whenever the caller knows them. In
// Lambda each line also carries the invocation's aws_request_id (see inInvocation). Errors
// keep their stack and their cause chain. Warnings and errors go to stderr, the rest to stdout.
import { AsyncLocalStorage } from "node:async_hooks";
import { LogFormatter, LogItem, Logger as PowertoolsLogger } from "@aws-lambda-powertools/logger";
import type { LogAttributes, UnformattedAttributes } from "@aws-lambda-powertools/logger/types";
import type { Context } from "aws-lambda";
import { observabilityOptions } from "./config.js";

export type LogFields = Record<string, unknown> & { request_id?: string; instance_uuid?: string };

type Level = "debug" | "info" | "warn" | "error";

/** Our line shape: `event` (the Powertools message), a lowercase level, then the caller's fields. */
class EventFormatter extends LogFormatter {
  formatAttributes(attributes: UnformattedAttributes, fields: LogAttributes): LogItem {
    const lambda = invocation.getStore();
    return new LogItem({
      attributes: {
        time: this.formatTimestamp(attributes.timestamp),
        level: attributes.logLevel.toLowerCase(),
        event: attributes.message,
        service: attributes.serviceName,
        aws_request_id: lambda?.context.awsRequestId,
        function_name: lambda?.context.functionName,
        cold_start: lambda?.coldStart,
        xray_trace_id: attributes.xRayTraceId,
      },
    }).addAttributes(fields);
  }
}

/** Keys Powertools owns (it would drop them from a caller's fields with a warning). */
const RESERVED = new Set(["level", "message", "sampling_rate", "service", "timestamp"]);

function levelFromEnv(): Level {
  return observabilityOptions().logLevel;
}

let levelSet = levelFromEnv();
const root = new PowertoolsLogger({
  serviceName: observabilityOptions().serviceName,
  logLevel: levelSet.toUpperCase() as "INFO",
  logFormatter: new EventFormatter(),
});

/** Tests and the local runtime change NOVALESS_LOG_LEVEL at run time: follow it. */
function current(): PowertoolsLogger {
  const l = levelFromEnv();
  if (l !== levelSet) {
    root.setLogLevel(l.toUpperCase() as "INFO");
    levelSet = l;
  }
  return root;
}

/**
 * "json" (the default, and always on Lambda): Powertools' lines. "human": one short line per
 * event for a person at a terminal (the local runtime's `npm start` on a TTY).
 */
export type LogFormat = "json" | "human";
let format: LogFormat = "json";
const ORDER: readonly Level[] = ["debug", "info", "warn", "error"];

export function setLogFormat(f: LogFormat): void {
  format = f;
}

/** The format set (the local runtime's functions' thread logs as its main thread does). */
export function logFormat(): LogFormat {
  return format;
}

/** `12:04:05.123 event key=value …`, warnings and errors marked and on stderr. */
function humanLine(level: Level, event: string, fields: LogFields): string {
  const time = new Date().toISOString().slice(11, 23);
  const mark = level === "warn" ? " WARN" : level === "error" ? " ERROR" : "";
  const parts = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => {
      if (v instanceof Error) return `${k}=${JSON.stringify(v.stack ?? v.message)}`;
      // a bare word as is, other strings quoted, numbers and objects as JSON
      if (typeof v !== "string") return `${k}=${JSON.stringify(v)}`;
      return `${k}=${/^[^\s"=]+$/.test(v) ? v : JSON.stringify(v)}`;
    });
  return `${time}${mark} ${event}${parts.length ? ` ${parts.join(" ")}` : ""}\n`;
}

function write(level: Level, event: string, fields: LogFields): void {
  if (format === "human") {
    current();
    if (ORDER.indexOf(level) < ORDER.indexOf(levelSet)) return;
    (level === "warn" || level === "error" ? process.stderr : process.stdout).write(
      humanLine(level, event, fields),
    );
    return;
  }
  const attributes: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) attributes[RESERVED.has(k) ? `${k}_field` : k] = v;
  current()[level](event, attributes);
}

/**
 * The invocation a line belongs to. Powertools' addContext keeps one context for the whole
 * process, which is right on Lambda (one invocation at a time) but not in the local runtime,
 * where every function runs in one process at once: lines took whichever function was invoked last.
 */
const invocation = new AsyncLocalStorage<{ context: Context; coldStart: boolean }>();
/** functions invoked in this process already: their next invocation is warm */
const warm = new Set<string>();

/** A Lambda handler's body, every line it logs stamped with its aws_request_id and cold start. */
export function inInvocation<T>(context: Context | undefined, body: () => Promise<T>): Promise<T> {
  if (!context) return body();
  const coldStart = !warm.has(context.functionName);
  warm.add(context.functionName);
  return invocation.run({ context, coldStart }, body);
}

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export function logger(base: LogFields = {}): Logger {
  return {
    debug: (e, f) => write("debug", e, { ...base, ...f }),
    info: (e, f) => write("info", e, { ...base, ...f }),
    warn: (e, f) => write("warn", e, { ...base, ...f }),
    error: (e, f) => write("error", e, { ...base, ...f }),
    child: (f) => logger({ ...base, ...f }),
  };
}

export const log = logger();
