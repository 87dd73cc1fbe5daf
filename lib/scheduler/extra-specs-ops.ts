// Nova's nova/scheduler/filters/extra_specs_ops.py: the operators flavor extra specs may start
// with, used by ComputeCapabilitiesFilter and AggregateInstanceExtraSpecsFilter.
//   =  (number ≥)  ==  !=  >=  <=  (numbers)   s== s!= s>= s> s<= s<  (strings)
//   <in> (substring)   <all-in> (every word a substring)   <or> v1 <or> v2 … (one of)
// A requirement not starting with an operator must equal the value exactly.
import { pyFloat } from "./python.js";

type Op = (value: string, operand: string) => boolean;

/** float() of both sides; Nova raises ValueError on text, here the value just does not match. */
const numeric =
  (cmp: (a: number, b: number) => boolean): Op =>
  (value, operand) => {
    const a = pyFloat(value);
    const b = pyFloat(operand);
    return a !== undefined && b !== undefined && cmp(a, b);
  };

const OPS: Readonly<Record<string, Op>> = {
  "=": numeric((a, b) => a >= b),
  "==": numeric((a, b) => a === b),
  "!=": numeric((a, b) => a !== b),
  ">=": numeric((a, b) => a >= b),
  "<=": numeric((a, b) => a <= b),
  "<in>": (value, operand) => value.includes(operand),
  "s==": (value, operand) => value === operand,
  "s!=": (value, operand) => value !== operand,
  "s<": (value, operand) => value < operand,
  "s<=": (value, operand) => value <= operand,
  "s>": (value, operand) => value > operand,
  "s>=": (value, operand) => value >= operand,
};

/** extra_specs_ops.match(value, req). `value` undefined is Python's None. */
export function matchExtraSpec(value: string | undefined, req: string): boolean {
  // Python's str.split(): runs of whitespace, no empty words.
  const words = req.split(/\s+/).filter(Boolean);
  const op = words.shift();
  const method = op === undefined ? undefined : OPS[op];
  if (op !== "<or>" && op !== "<all-in>" && !method) return value === req;
  if (value === undefined) return false;
  if (op === "<or>") {
    // "<or> v1 <or> v2": every other word is a candidate. Nova raises on "<or>" alone; no match here.
    while (words.length > 0) {
      if (words.shift() === value) return true;
      if (words.length === 0) break;
      words.shift();
      if (words.length === 0) break;
    }
    return false;
  }
  if (words.length === 0) return false;
  if (op === "<all-in>") return words.every((w) => value.includes(w));
  return method!(value, words[0]!);
}

/**
 * matchExtraSpec for one requirement, parsed once and remembering its answer per value: a filter
 * asks it of thousands of hosts that mostly share a few values.
 */
export function extraSpecMatcher(req: string): (value: string | undefined) => boolean {
  const known = new Map<string | undefined, boolean>();
  return (value) => {
    let ok = known.get(value);
    if (ok === undefined) {
      ok = matchExtraSpec(value, req);
      if (known.size < 1024) known.set(value, ok);
    }
    return ok;
  };
}
