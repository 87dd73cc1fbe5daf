#!/usr/bin/env tsx
// `npm run seed`: put the default flavors and images into the Catalog table the environment
// names (NOVALESS_CATALOG_TABLE, from the stack outputs), and Keystone's bootstrap into the
// Identity table (NOVALESS_IDENTITY_TABLE): domain Default, project admin, roles, user admin; with
// NOVALESS_NETWORKING_TABLE, the by-device key of ports an older release wrote.
// Idempotent: existing items are kept, except the admin's password, reset from the secret:
//   npm run seed -- --admin-password-from-secret <AdminPasswordSecretArn>   (deployed stack)
//   npm run seed -- --demo            (local users: admin / admin-secret and demo / demo-secret)
import { parseArgs } from "node:util";
import { secretString } from "../lib/aws/secrets.js";
import { seedCatalog } from "../lib/catalog/repo.js";
import { seedIdentity } from "../lib/identity/seed.js";
import { indexPortDevices } from "../lib/network/store/ports.js";

const { values } = parseArgs({
  options: {
    "admin-password-from-secret": { type: "string" },
    demo: { type: "boolean", default: false },
  },
});

if (!process.env.NOVALESS_CATALOG_TABLE) {
  process.stderr.write("set NOVALESS_CATALOG_TABLE to the stack's CatalogTableName output\n");
  process.exit(2);
}
const r = await seedCatalog();
process.stdout.write(
  `seeded ${r.flavors} flavor(s) and ${r.images} image(s) into ${process.env.NOVALESS_CATALOG_TABLE}\n`,
);
// The admin's password is never a default on a deployed stack: it comes from the secret, or the
// operator asks for the local users (--demo: admin / admin-secret and demo / demo-secret).
const secret = values["admin-password-from-secret"];
if (secret || values.demo) {
  if (!process.env.NOVALESS_IDENTITY_TABLE) {
    process.stderr.write("set NOVALESS_IDENTITY_TABLE to the stack's IdentityTableName output\n");
    process.exit(2);
  }
  const adminPassword = secret ? await secretString(secret) : "admin-secret";
  const i = await seedIdentity({ adminPassword, resetAdminPassword: !!secret, demo: values.demo });
  process.stdout.write(`seeded ${i.written} identity item(s) into ${process.env.NOVALESS_IDENTITY_TABLE}\n`);
}
if (process.env.NOVALESS_NETWORKING_TABLE) {
  const n = await indexPortDevices();
  process.stdout.write(`indexed ${n} port(s) by device in ${process.env.NOVALESS_NETWORKING_TABLE}\n`);
}
