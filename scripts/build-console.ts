// `npm run build:console`: the web console (console/src, Preact) bundled by esbuild into one
// JSON module of assets (console/dist/assets.json: the page, the script, the styles, each with
// its content hash), which the API serves at /console (lib/api/console.ts) and which esbuild
// bundles into the API Lambda with the rest of the handler. Run before `npm start`, `npm test`
// and `cdk synth` (their scripts do it); it takes well under a second.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { buildSync } from "esbuild";

const root = new URL("../console/", import.meta.url);
const hash = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 12);

export function buildConsole(): { js: number; css: number } {
  const out = buildSync({
    entryPoints: [new URL("src/main.tsx", root).pathname],
    bundle: true,
    format: "esm",
    target: ["chrome110", "firefox115"],
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    write: false,
    outdir: "out",
    logLevel: "warning",
    legalComments: "none",
  });
  const js = out.outputFiles.find((f) => f.path.endsWith(".js"))!.text;
  const css = readFileSync(new URL("src/style.css", root), "utf8");
  const assets = {
    js: { hash: hash(js), body: js },
    css: { hash: hash(css), body: css },
  };
  mkdirSync(new URL("dist/", root), { recursive: true });
  writeFileSync(new URL("dist/assets.json", root), JSON.stringify(assets));
  return { js: js.length, css: css.length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { js, css } = buildConsole();
  process.stdout.write(
    `console/dist/assets.json: script ${(js / 1024).toFixed(0)} KiB, styles ${(css / 1024).toFixed(0)} KiB\n`,
  );
}
