// Nova's JsonFilter: scheduler hint `query`, a JSON expression over the host's attributes:
//   ["and", [">=", "$free_ram_mb", 1024], ["in", "$host", "host-1", "host-2"]]
// Operators = < > in <= >= (the first argument against every other), not (negates each argument,
// giving a list), or, and. "$name" reads a host attribute, "$name.key" a key of a dict attribute.
// Python's semantics throughout: a list result passes if any element is true, a missing
// attribute is dropped from the arguments, and a comparison needs at least two arguments.
import { schedulerHint } from "../hints.js";
import { hostAttributeOf } from "../host-view.js";
import { pyCompare, pyEquals, truthy } from "../python.js";
import type { FleetIndex, HostFilter, HostState, Rejection } from "../types.js";

class InvalidQuery extends Error {}

/**
 * An operator over its first `n` arguments: `args` is the operator's own list, refilled for each
 * host without being resized (the commands keep nothing of it).
 */
type Command = (args: unknown[], n: number) => unknown;

/** _op_compare: the first argument against all the others; Python's TypeError makes the query invalid. */
const compare =
  (ok: (d: number) => boolean): Command =>
  (args, n) => {
    if (n < 2) return false;
    for (let k = 1; k < n; k++) {
      const d = pyCompare(args[0], args[k]);
      if (d === undefined)
        throw new InvalidQuery(`cannot order ${JSON.stringify(args[0])} and ${JSON.stringify(args[k])}`);
      if (!ok(d)) return false;
    }
    return true;
  };

// (Loops, not args.slice(1).every(…): they run for every host, and allocate nothing.)
const COMMANDS: Readonly<Record<string, Command>> = {
  "=": (args, n) => {
    if (n < 2) return false;
    for (let k = 1; k < n; k++) if (!pyEquals(args[0], args[k])) return false;
    return true;
  },
  "<": compare((d) => d < 0),
  ">": compare((d) => d > 0),
  in: (args, n) => {
    for (let k = 1; k < n; k++) if (pyEquals(args[0], args[k])) return true;
    return false;
  },
  "<=": compare((d) => d <= 0),
  ">=": compare((d) => d >= 0),
  not: (args, n) => {
    const negated = new Array<boolean>(n);
    for (let k = 0; k < n; k++) negated[k] = !truthy(args[k]);
    return negated;
  },
  or: (args, n) => {
    for (let k = 0; k < n; k++) if (truthy(args[k])) return true;
    return false;
  },
  and: (args, n) => {
    for (let k = 0; k < n; k++) if (!truthy(args[k])) return false;
    return true;
  },
};

export const JsonFilter: HostFilter = {
  name: "JsonFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare(spec, ctx) {
    const hint = schedulerHint(spec, "query");
    if (!truthy(hint)) return null;
    let query: unknown = hint;
    if (typeof hint === "string") {
      try {
        query = JSON.parse(hint);
      } catch {
        const invalid = { summary: "cannot be matched: the query hint is not JSON" };
        return () => invalid;
      }
    }
    const summary = `do not match the query ${typeof hint === "string" ? hint : JSON.stringify(hint)}`;
    const rejection: Rejection = { summary };
    const evaluate = compile(query, ctx.fleet);
    return (host, i) => {
      let result: unknown;
      try {
        result = evaluate(host, i);
      } catch (e) {
        if (!(e instanceof InvalidQuery)) throw e;
        return { summary, reason: `the query is invalid for this host: ${e.message}` };
      }
      const passes = Array.isArray(result) ? result.some(truthy) : truthy(result);
      return passes ? null : rejection;
    };
  },
};

/** The value of a query or argument for the host at position `i`. */
type Evaluator = (host: HostState, i: number) => unknown;

/**
 * The query as a function of the host, its operators and attribute paths resolved once per
 * request rather than once per host. It evaluates as the query would, argument by argument, and
 * throws the same InvalidQuery at the same point. A number attribute reads the fleet's column.
 */
function compile(query: unknown, fleet: FleetIndex): Evaluator {
  if (!truthy(query)) return () => true;
  if (!Array.isArray(query)) return invalid("a query is a list");
  const command =
    typeof query[0] === "string" && Object.hasOwn(COMMANDS, query[0]) ? COMMANDS[query[0]] : undefined;
  if (!command) return invalid(`unknown operator ${JSON.stringify(query[0])}`);
  const parts = Array.from(query.slice(1), (arg) => argument(arg, fleet));
  // One argument list per operator, refilled for each host (an operator is never its own
  // argument): a list per host and operator was most of this filter's time.
  const args = new Array<unknown>(parts.length).fill(undefined);
  const general: Evaluator = (host, i) => {
    let n = 0;
    for (const part of parts) {
      const arg = part(host, i);
      if (arg !== undefined && arg !== null) args[n++] = arg;
    }
    return command(args, n);
  };
  return numberComparison(query, fleet, general) ?? general;
}

/**
 * [op, "$number_attribute", n, …] with numbers alone after it (`[">=", "$free_ram_mb", 1024]`):
 * the column against the numbers, no argument list. Python's comparison of two numbers is
 * theirs; a NaN (which Python cannot order) goes the general way, to fail as it does there.
 */
function numberComparison(query: unknown[], fleet: FleetIndex, general: Evaluator): Evaluator | undefined {
  const [op, attribute, ...rest] = query;
  if (typeof attribute !== "string" || !attribute.startsWith("$") || rest.length === 0) return undefined;
  if (!rest.every((v) => typeof v === "number" && Number.isFinite(v))) return undefined;
  const column = fleet.numberColumn(attribute.slice(1));
  if (!column) return undefined;
  const numbers = rest as number[];
  if (typeof op !== "string" || !Object.hasOwn(NUMBER_TESTS, op)) return undefined;
  const test = NUMBER_TESTS[op]!;
  return (host, i) => {
    const v = column[i]!;
    return Number.isNaN(v) ? general(host, i) : test(v, numbers);
  };
}

/** The commands over a number and numbers, as COMMANDS answers them for numbers. */
const NUMBER_TESTS: Readonly<Record<string, (v: number, numbers: readonly number[]) => boolean>> = {
  "=": (v, ns) => ns.every((n) => v === n),
  "<": (v, ns) => ns.every((n) => v < n),
  ">": (v, ns) => ns.every((n) => v > n),
  "<=": (v, ns) => ns.every((n) => v <= n),
  ">=": (v, ns) => ns.every((n) => v >= n),
  in: (v, ns) => ns.includes(v),
};

function invalid(message: string): Evaluator {
  return () => {
    throw new InvalidQuery(message);
  };
}

/** A list is a query; text is a lookup; anything else is itself. */
function argument(arg: unknown, fleet: FleetIndex): Evaluator {
  if (Array.isArray(arg)) return compile(arg, fleet);
  if (typeof arg === "string") return lookup(arg, fleet);
  return () => arg;
}

/** _parse_string: "$attr.key…" reads the host; other text is itself; "" is None. */
function lookup(text: string, fleet: FleetIndex): Evaluator {
  if (!text) return () => undefined;
  if (!text.startsWith("$")) return () => text;
  const [name, ...path] = text.slice(1).split(".");
  // A number attribute is in the fleet's column, always equal to the host state's.
  const column = path.length === 0 ? fleet.numberColumn(name!) : undefined;
  if (column) return (_host, i) => column[i];
  const attribute = hostAttributeOf(name!);
  return (host) => {
    let obj = attribute(host);
    for (const key of path) {
      if (obj === undefined || obj === null || typeof obj !== "object" || Array.isArray(obj))
        return undefined;
      obj = (obj as Record<string, unknown>)[key];
    }
    return obj ?? undefined;
  };
}
