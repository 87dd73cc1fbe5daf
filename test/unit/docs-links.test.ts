// Every relative link in the README and docs/ resolves: to a file that exists and, with a
// #fragment, to a heading of that file (GitHub's anchors). Docs move often; a dead link is a
// newcomer's first dead end.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const pages = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks and inline code spans, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = readFileSync(file, "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

function brokenLinks(page: string): string[] {
  const file = join(root, page);
  const broken: string[] = [];
  for (const m of prose(readFileSync(file, "utf8")).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path, fragment] = target.split("#", 2) as [string, string | undefined];
    const dest = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
    if (!existsSync(dest)) {
      broken.push(`${target}: no ${relative(root, dest)}`);
      continue;
    }
    if (fragment && dest.endsWith(".md") && !anchors(dest).has(fragment.toLowerCase())) {
      broken.push(`${target}: no heading #${fragment} in ${relative(root, dest)}`);
    }
  }
  return broken;
}

describe("docs links", () => {
  it.each(pages)("%s: every relative link resolves", (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it("finds links, anchors and code the way GitHub does", () => {
    expect(slug("Queue URLs: `SQS_ENDPOINT_STRATEGY=dynamic`")).toBe(
      "queue-urls-sqs_endpoint_strategydynamic",
    );
    expect(slug("The journey of a build, file by file")).toBe("the-journey-of-a-build-file-by-file");
    expect(prose("a [x](y.md)\n```sh\n[z](w.md)\n```\n`[q](r.md)`")).toBe("a [x](y.md)\n\n");
  });
});
