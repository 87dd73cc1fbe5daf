// Structured logs: one JSON object per line, always with the event name, and with request_id
// and instance_uuid whenever the caller knows them.
export type LogFields = Record<string, unknown> & { request_id?: string; instance_uuid?: string };

type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

function threshold(): number {
  const l = (process.env.NOVALESS_LOG_LEVEL || "info") as Level;
  return order[l] ?? order.info;
}

function write(level: Level, event: string, fields: LogFields): void {
  if (order[level] < threshold()) return;
  const line = JSON.stringify({ time: new Date().toISOString(), level, event, ...fields }, (_k, v) =>
    v instanceof Error ? { name: v.name, message: v.message } : v,
  );
  if (level === "error" || level === "warn") process.stderr.write(`${line}\n`);
  else process.stdout.write(`${line}\n`);
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
