// `npm run seed`: put the default flavors and images into the Catalog table the environment
// names (NOVALESS_CATALOG_TABLE, from the stack outputs). Idempotent: existing items are kept.
import { seedCatalog } from "../lib/catalog/repo.js";

if (!process.env.NOVALESS_CATALOG_TABLE) {
  process.stderr.write("set NOVALESS_CATALOG_TABLE to the stack's CatalogTableName output\n");
  process.exit(2);
}
const r = await seedCatalog();
process.stdout.write(
  `seeded ${r.flavors} flavor(s) and ${r.images} image(s) into ${process.env.NOVALESS_CATALOG_TABLE}\n`,
);
