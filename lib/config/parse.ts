// Turning an option's text (an environment variable, an INI value, a flag) into its value.
import { z } from "zod";
import type { ConfigOption, OptionValue } from "./option.js";

const TRUE = ["true", "1", "yes", "on", "y", "t"];
const FALSE = ["false", "0", "no", "off", "n", "f"];

const boolText = z.union(
  [
    z.boolean(),
    z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum([...TRUE, ...FALSE]))
      .transform((v) => TRUE.includes(v)),
  ],
  { error: "is not a boolean" },
);

function numberSchema(o: ConfigOption): z.ZodType<number> {
  let n = z.coerce.number({ error: "is not a number" });
  if (o.kind === "int") n = n.int({ error: "is not an integer" });
  if (o.min !== undefined) n = n.min(o.min, { error: `is below its minimum ${o.min}` });
  return n;
}

const schemas = new WeakMap<ConfigOption, z.ZodType<OptionValue>>();

/** The schema that turns an option's text (or an INI file's value) into its value. */
function schemaOf(o: ConfigOption): z.ZodType<OptionValue> {
  let s = schemas.get(o);
  if (s) return s;
  const nullable = <T extends OptionValue>(inner: z.ZodType<T>): z.ZodType<T | null> =>
    z.preprocess((v) => (v === "" ? null : v), inner.nullable()) as z.ZodType<T | null>;
  switch (o.kind) {
    case "int":
    case "float":
      s = numberSchema(o);
      break;
    case "float?":
      s = nullable(numberSchema(o));
      break;
    case "bool":
      s = boolText;
      break;
    case "bool?":
      s = nullable(boolText);
      break;
    case "list":
      s = z.string().transform((v) =>
        v
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
      );
      break;
    case "string":
      s = o.choices
        ? z
            .string()
            .trim()
            .toLowerCase()
            .pipe(z.enum(o.choices as [string, ...string[]], { error: "is not a choice" }))
        : z.string({ error: "is not a string" });
      break;
    case "string?":
      s = nullable(z.string({ error: "is not a string" }));
      break;
  }
  schemas.set(o, s);
  return s;
}

/** An option's value from its text, or why not ("is not a number", "is below its minimum 1", …). */
export function checkOption(
  o: ConfigOption,
  raw: string | number | boolean,
): { ok: true; value: OptionValue } | { ok: false; problem: string } {
  const text = typeof raw === "boolean" && !o.kind.startsWith("bool") ? String(raw) : raw;
  const r = schemaOf(o).safeParse(typeof text === "number" ? String(text) : text);
  if (r.success) return { ok: true, value: r.data };
  const problem = r.error.issues[0]?.message ?? "is invalid";
  return {
    ok: false,
    problem: problem === "is not a choice" ? `must be one of ${(o.choices ?? []).join(", ")}` : problem,
  };
}

/** An option's value from its text; throws `configuration ENV=raw <problem>`. */
export function parseOption(o: ConfigOption, raw: string): OptionValue {
  const r = checkOption(o, raw);
  if (!r.ok) throw new Error(`configuration ${o.env}=${raw} ${r.problem}`);
  return r.value;
}

const cloneValue = <T>(v: T): T => (Array.isArray(v) ? ([...v] as T) : v);

/** The environment's text for an option (its variable, else an alias), undefined when unset. */
export function envText(o: ConfigOption, env: Record<string, string | undefined>): string | undefined {
  for (const name of [o.env, ...(o.aliases ?? [])]) {
    const v = env[name];
    if (v !== undefined) return v;
  }
  return undefined;
}

// Options are read on every call (tests and the local runtime change the environment at run
// time); the last text seen and its value are kept, so an unchanged option is not parsed again.
const lastRead = new WeakMap<ConfigOption, { text: string | undefined; value: OptionValue | undefined }>();

/**
 * An option's value from the environment. An empty variable is unset, except for lists (empty)
 * and `?` kinds (null). Invalid text throws, unless the option is lenient (then the default).
 */
export function readOption(
  o: ConfigOption,
  env: Record<string, string | undefined> = process.env,
): OptionValue | undefined {
  const text = envText(o, env);
  const last = lastRead.get(o);
  if (env === process.env && last && last.text === text) return cloneValue(last.value);
  let value: OptionValue | undefined;
  if (text === undefined || (text === "" && o.kind !== "list" && !o.kind.endsWith("?"))) {
    value = o.default;
  } else if (o.lenient) {
    const r = checkOption(o, text);
    value = r.ok ? r.value : o.default;
  } else {
    value = parseOption(o, text);
  }
  if (env === process.env) lastRead.set(o, { text, value });
  return cloneValue(value);
}
