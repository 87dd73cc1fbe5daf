// `npm run bundle:agent [-- --outfile dist/novaless-compute.mjs]`: novaless-compute as one
// self-contained file (everything bundled, the AWS SDK included) for Node 20+, which the systemd
// unit runs (packaging/novaless-compute.service).
import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import { build } from "esbuild";

export const AGENT_BANNER =
  "#!/usr/bin/env node\n" +
  // CommonJS dependencies bundled into ESM still call require()
  "import { createRequire as __novalessCreateRequire } from 'node:module';\n" +
  "const require = __novalessCreateRequire(import.meta.url);";

export async function bundleAgent(outfile: string): Promise<number> {
  await build({
    entryPoints: [new URL("../bin/novaless-compute.ts", import.meta.url).pathname],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile,
    banner: { js: AGENT_BANNER },
    mainFields: ["module", "main"],
    minify: false,
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
  });
  return statSync(outfile).size;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { outfile: { type: "string", default: "dist/novaless-compute.mjs" } },
  });
  const bytes = await bundleAgent(values.outfile);
  process.stdout.write(
    `${values.outfile}: ${(bytes / 2 ** 20).toFixed(1)} MiB, one file (node ${values.outfile} --help)\n`,
  );
}
