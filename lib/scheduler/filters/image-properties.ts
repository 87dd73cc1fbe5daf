// Nova's ImagePropertiesFilter: the image's architecture, hypervisor type and VM mode must be
// one of the host's supported_instances triples, and its hypervisor version must satisfy the
// image's img_hv_requested_version (e.g. ">=2.6, <3.0").
import {
  canonicalArchitecture,
  canonicalHypervisorType,
  canonicalVmMode,
  imageMetaProps,
} from "../image-props.js";
import type { HostFilter, Rejection } from "../types.js";

export const ImagePropertiesFilter: HostFilter = {
  name: "ImagePropertiesFilter",
  // Image properties and compute capabilities do not change within a request.
  runOncePerRequest: true,
  // Nova's RUN_ON_REBUILD: it judges the image, so a rebuild's new one is checked on its host
  runOnRebuild: true,
  reads: {
    host: "hypervisor",
    spec: ["image.properties"],
    config: ["image_properties_default_architecture"],
  },
  prepare(spec, ctx) {
    const props = imageMetaProps(spec.image.properties);
    const wanted = [
      canonicalArchitecture(props.get("hw_architecture") ?? ctx.config.image_properties_default_architecture),
      canonicalHypervisorType(props.get("img_hv_type")),
      canonicalVmMode(props.get("hw_vm_mode")),
    ];
    // Supported everywhere when the image asks for none of them (the version is not checked then).
    if (!wanted.some(Boolean)) return null;
    const described = wanted.map((p) => p ?? "*").join("/");
    const required = props.get("img_hv_requested_version");
    const predicate = required ? parseVersionPredicate(required) : undefined;
    const rejection: Rejection = { summary: `do not support image properties ${described}` };
    return (host) => {
      if (host.supported_instances.length === 0) {
        return { ...rejection, reason: "host advertises no supported instances" };
      }
      for (const triple of host.supported_instances) {
        if (!wanted.every((p) => !p || triple.includes(p))) continue;
        // Nova skips the version check when either side is missing (hypervisor_version 0).
        if (!required || !host.hypervisor_version) return null;
        if (predicate?.(versionToString(host.hypervisor_version))) return null;
      }
      return {
        ...rejection,
        reason: `host supports ${host.supported_instances.map((t) => t.join("/")).join(", ")} at hypervisor version ${versionToString(host.hypervisor_version)}, the image needs ${described}${required ? ` at ${required}` : ""}`,
      };
    };
  },
};

/** oslo's convert_version_to_str: 2003001 → "2.3.1" (three digits per part). */
export function versionToString(version: number): string {
  const parts: number[] = [];
  let v = Math.trunc(version);
  while (v !== 0) {
    parts.unshift(v % 1000);
    v = Math.trunc(v / 1000);
  }
  return parts.join(".");
}

const COMPARISON = /^\s*(<=|>=|<|>|!=|==)\s*([^\s,]+)\s*$/;

/**
 * distutils' VersionPredicate over "op version, op version, …": every comparison must hold.
 * Versions are dotted numbers compared part by part (missing parts are 0). A predicate or version
 * that does not parse satisfies nothing (Nova raises ValueError).
 */
export function parseVersionPredicate(text: string): (version: string) => boolean {
  const comparisons = text.split(",").map((part) => {
    const m = COMPARISON.exec(part);
    const v = m ? parseVersion(m[2]!) : undefined;
    return m && v ? { op: m[1]!, version: v } : undefined;
  });
  if (comparisons.some((c) => !c)) return () => false;
  return (version) => {
    const v = parseVersion(version);
    if (!v) return false;
    return comparisons.every((c) => {
      const d = compareVersions(v, c!.version);
      switch (c!.op) {
        case "<":
          return d < 0;
        case "<=":
          return d <= 0;
        case ">":
          return d > 0;
        case ">=":
          return d >= 0;
        case "==":
          return d === 0;
        default:
          return d !== 0;
      }
    });
  };
}

function parseVersion(text: string): number[] | undefined {
  if (!/^\d+(\.\d+)*$/.test(text)) return undefined;
  return text.split(".").map(Number);
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length, 3); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
