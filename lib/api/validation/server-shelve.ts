// Nova's request schemas of unshelve (nova/api/openstack/compute/schemas/shelve.py): anything
// before 2.77; null or {"availability_zone": name} from 2.77; null or {"availability_zone"?:
// string | null, "host"?: string} from 2.91.
import { z } from "zod";
import type { ApiVersion } from "../microversion.js";
import { novaName, validate } from "./common.js";

const v277 = z.union([z.null(), z.strictObject({ availability_zone: novaName })]);
const v291 = z.union([
  z.null(),
  z.strictObject({ availability_zone: z.string().nullable().optional(), host: z.string().optional() }),
]);

export interface UnshelveBody {
  /** undefined: not given (the server keeps its zone); null: unpinned (2.91) */
  availability_zone?: string | null;
  host?: string;
}

export function parseUnshelveBody(raw: unknown, version: ApiVersion): UnshelveBody {
  if (version.atLeast("2.91")) return validate(v291, raw) ?? {};
  if (version.atLeast("2.77")) return validate(v277, raw) ?? {};
  return {};
}
