// docs/configuration.md and packaging/compute.conf.example are generated from lib/config.ts's
// table (`npm run docs:config`): a changed option without a regenerated document fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OPTIONS } from "../../lib/config.js";
import { GENERATED } from "../../scripts/gen-config-docs.js";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");

describe("the configuration's generated documents", () => {
  it.each(Object.keys(GENERATED) as (keyof typeof GENERATED)[])(
    "%s is as generated (npm run docs:config)",
    (path) => {
      expect(read(path), `${path} differs from lib/config.ts's table: run npm run docs:config`).toBe(
        GENERATED[path](),
      );
    },
  );

  it("list every option, each under its own group and name and variable", () => {
    const doc = read("docs/configuration.md");
    for (const o of OPTIONS) {
      expect(doc).toContain(`\`[${o.group}] ${o.name}\``);
      expect(doc).toContain(`\`${o.env}\``);
    }
    const names = OPTIONS.map((o) => `${o.group}.${o.name}`);
    expect(new Set(names).size).toBe(names.length);
    const envs = OPTIONS.map((o) => o.env);
    expect(new Set(envs).size).toBe(envs.length);
  });

  it("document the variables once read without a word", () => {
    const doc = read("docs/configuration.md");
    for (const env of [
      "NOVALESS_API_URL",
      "NOVALESS_CONSOLE_TIMEOUT_S",
      "NOVALESS_MULTI_INSTANCE_NAME_TEMPLATE",
    ])
      expect(doc).toContain(`\`${env}\``);
  });
});
