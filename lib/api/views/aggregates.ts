// Nova's os-aggregates views as a version table: the integer id at every version, the uuid from
// 2.41 (an aggregate created before integer ids has only its uuid, shown as its id).
import type { Aggregate } from "../../catalog/types.js";
import { viewFields } from "../microversion.js";
import { isoMicro } from "./format.js";

const base = (a: Aggregate) => ({
  availability_zone: a.availability_zone,
  created_at: isoMicro(a.created_at),
  deleted: false,
  deleted_at: null,
  id: a.number ?? a.id,
  name: a.name,
  updated_at: isoMicro(a.updated_at),
});

const uuidRow = { min: "2.41", fields: (a: Aggregate) => ({ uuid: a.id }) };

export const aggregateView = viewFields<Aggregate, undefined>([
  { fields: (a) => ({ ...base(a), hosts: [...a.hosts], metadata: { ...a.metadata } }) },
  uuidRow,
]);

/** Nova's create answer leaves out hosts and metadata ("to maintain the same API result"). */
export const aggregateCreatedView = viewFields<Aggregate, undefined>([{ fields: base }, uuidRow]);
