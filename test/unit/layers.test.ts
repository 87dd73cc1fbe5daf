// The folders of lib/ form a one-way graph. Each folder (or top-level module) may import its own
// layer and the layers below, never one above, and no folders import each other in a circle.
// Imports are read with a regex: every `import … from`, `export … from`, `import "…"` and
// `import("…")` with a relative specifier.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** Bottom first. A name is a folder of lib/ or a top-level module (lib/config.ts → "config"). */
const LAYERS: readonly (readonly string[])[] = [
  ["config", "resources"],
  ["log", "placement-rules"],
  ["messages", "metrics"],
  ["aws"],
  // the compute agent: its own edge, on hosts; it imports only the layers listed before it
  ["compute"],
  ["placement", "catalog", "identity", "network", "quotas"],
  ["scheduler"],
  ["instances"],
  ["conductor"],
  ["api"],
];

/**
 * Imports that still break the order, each to go, by file relative to lib/ ("a.ts → b/c.ts"):
 * none now (the compute agent reads Placement's rules from placement-rules.ts and the flavor and
 * image types from messages/).
 */
const PENDING: readonly string[] = [];

const LIB = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "lib");
const SPECIFIER =
  /\b(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") ? [p] : [];
  });
}

/** lib/scheduler/x.ts → "scheduler"; lib/config.ts → "config". */
function folderOf(file: string): string {
  const [head, ...rest] = relative(LIB, file).split(sep);
  return rest.length ? head! : head!.replace(/\.[jt]s$/, "");
}

interface Edge {
  from: string;
  to: string;
  file: string;
  target: string;
}

function edges(): Edge[] {
  return sources(LIB).flatMap((file) => {
    const text = readFileSync(file, "utf8");
    return [...text.matchAll(SPECIFIER)].flatMap((m): Edge[] => {
      const spec = m[1] ?? m[2]!;
      if (!spec.startsWith(".")) return [];
      const target = join(dirname(file), spec).replace(/\.js$/, ".ts");
      if (relative(LIB, target).startsWith("..")) return [];
      const from = folderOf(file);
      const to = folderOf(target);
      return from === to ? [] : [{ from, to, file, target }];
    });
  });
}

const layerOf = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, i] as const)));
const named = (e: Edge) => `${relative(LIB, e.file)} → ${relative(LIB, e.target)}`.split(sep).join("/");

describe("the layers of lib/", () => {
  const all = edges();

  it("places every folder of lib/ in a layer", () => {
    const unplaced = [...new Set(all.flatMap((e) => [e.from, e.to]))].filter((f) => !layerOf.has(f));
    expect(unplaced).toEqual([]);
  });

  it("imports only from the layers below", () => {
    const upward = all.filter((e) => layerOf.get(e.from)! < layerOf.get(e.to)!).map(named);
    expect(upward.filter((e) => !PENDING.includes(e))).toEqual([]);
    // a pending import that is gone is crossed off the list
    expect(PENDING.filter((p) => !upward.includes(p))).toEqual([]);
  });

  it("has no cycle between folders", () => {
    const next = new Map<string, Set<string>>();
    for (const e of all) next.set(e.from, (next.get(e.from) ?? new Set()).add(e.to));
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === "done") return;
      if (state.get(f) === "open") {
        cycles.push([...path.slice(path.indexOf(f)), f].join(" → "));
        return;
      }
      state.set(f, "open");
      for (const t of next.get(f) ?? []) visit(t, [...path, f]);
      state.set(f, "done");
    };
    for (const f of next.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it("keeps the scheduler free of I/O: no value from placement/, aws/ or the AWS SDK", () => {
    // ARCHITECTURE.md: the scheduler Lambda composes load → decide → record; lib/scheduler only
    // decides. Placement's record types may be named (`import type`), its reads may not be called.
    const VALUE_IMPORT = /^\s*import\s+(?!type\b)[^;]*?from\s+["']([^"']+)["']/gm;
    const io = sources(join(LIB, "scheduler")).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(VALUE_IMPORT)]
        .map((m) => m[1]!)
        .filter((spec) => /(^|\/)(placement|aws)\/|^@aws-sdk\//.test(spec))
        .map((spec) => `${relative(LIB, file)} → ${spec}`),
    );
    expect(io).toEqual([]);
  });

  it("reads the imports it checks", () => {
    // the parse finds the imports it is meant to find: a regex that silently matches nothing
    // would pass every check above
    expect(all.some((e) => e.from === "conductor" && e.to === "instances")).toBe(true);
    expect(all.some((e) => e.from === "api" && e.to === "conductor")).toBe(true);
  });
});
