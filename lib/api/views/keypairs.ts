// Nova's keypair views (views/keypairs.py) as version tables: `type` from 2.2; a generated key's
// private half only in the create answer.
import type { Keypair } from "../../catalog/keypairs.js";
import { viewFields } from "../microversion.js";
import { isoMicro } from "./format.js";

const typeRow = { min: "2.2", fields: (k: Keypair) => ({ type: k.type }) };

const indexFields = (k: Keypair) => ({ name: k.name, public_key: k.public_key, fingerprint: k.fingerprint });

export const keypairIndexView = viewFields<Keypair, undefined>([{ fields: indexFields }, typeRow]);

export const keypairCreateView = viewFields<Keypair, { private_key?: string }>([
  { fields: (_k, c) => (c.private_key !== undefined ? { private_key: c.private_key } : {}) },
  { fields: (k) => ({ ...indexFields(k), user_id: k.user_id }) },
  typeRow,
]);

export const keypairShowView = viewFields<Keypair, undefined>([
  {
    fields: (k) => ({
      ...indexFields(k),
      user_id: k.user_id,
      created_at: isoMicro(k.created_at),
      // Nova exposes its soft-delete columns but never shows a deleted key, nor updates one
      deleted: false,
      deleted_at: null,
      id: k.id,
      updated_at: null,
    }),
  },
  typeRow,
]);
