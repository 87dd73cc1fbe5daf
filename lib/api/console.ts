// /console: the web console (console/, built by scripts/build-console.ts into one JSON module
// of assets that esbuild bundles with this handler). The page is tiny and never cached; the
// script and styles are named by their content hash and cached for good. The console then
// talks only to the public API beside it.
import { Hono } from "hono";
import assets from "../../console/dist/assets.json" with { type: "json" };

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const IMMUTABLE = "public, max-age=31536000, immutable";

function page(root: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>novaless console</title>
<link rel="stylesheet" href="${root}/console/assets/app.${assets.css.hash}.css">
<script type="module" src="${root}/console/assets/app.${assets.js.hash}.js"></script>
</head>
<body>
<div id="app"><noscript>The novaless console needs JavaScript.</noscript></div>
</body>
</html>
`;
}

export function consoleApp(): Hono {
  const app = new Hono({ strict: false });
  app.get("/", (c) => {
    // where the console is mounted, so a stage prefix in front of the API keeps working
    const root = c.req.path.replace(/\/console\/?$/, "");
    return c.html(page(root), 200, { ...SECURITY_HEADERS, "cache-control": "no-cache" });
  });
  app.get(`/assets/app.${assets.js.hash}.js`, (c) =>
    c.body(assets.js.body, 200, {
      ...SECURITY_HEADERS,
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": IMMUTABLE,
    }),
  );
  app.get(`/assets/app.${assets.css.hash}.css`, (c) =>
    c.body(assets.css.body, 200, {
      ...SECURITY_HEADERS,
      "content-type": "text/css; charset=utf-8",
      "cache-control": IMMUTABLE,
    }),
  );
  app.all("*", (c) =>
    c.json({ itemNotFound: { code: 404, message: "The resource could not be found." } }, 404),
  );
  return app;
}
