// `npm run docs:config`: docs/configuration.md and packaging/compute.conf.example, generated from
// the one option table (lib/config.ts, assembled from the groups' files under lib/config/).
// test/unit/config-docs.test.ts fails when either file differs from what this script writes, so a
// changed option is a changed document.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { exampleConf } from "../lib/compute/agent-config.js";
import { agentDefault, agentEnvName, type ConfigOption, OPTIONS, type Topic } from "../lib/config.js";

/** Where the generated files live, relative to the repository. */
export const GENERATED = {
  "docs/configuration.md": () => configurationDoc(),
  "packaging/compute.conf.example": () => exampleConf(),
} as const;

const TOPICS: Record<Topic, { title: string; intro: string }> = {
  scheduler: {
    title: "Scheduler",
    intro:
      "Nova's scheduler options, with Nova's (Zed) names and defaults. The stack sets each on every function from its `scheduler` prop (infra/stacks/novaless-stack.ts); lists are comma-separated, an empty value is an empty list or unset. The [DEFAULT] options marked *compute.conf* are also novaless-compute's: it reads them from compute.conf or its own variable (below).",
  },
  compute: {
    title: "Compute host (novaless-compute)",
    intro:
      "Read by novaless-compute from `/etc/novaless/compute.conf` (or `--config-file`) `[group] name`, from `NOVALESS_<GROUP>_<NAME>`, and from flags; lowest first: defaults, `--stack-outputs` (the file `cdk deploy --outputs-file` writes), the file, the environment, flags, `--set group.name=value`. packaging/compute.conf.example lists them all.",
  },
  conductor: { title: "Conductor", intro: "Read by the conductor and its watchdog." },
  api: {
    title: "Compute API",
    intro: "Read by the API (the Lambda function, or the local runtime's server).",
  },
  identity: {
    title: "Identity",
    intro: "Read by the API's /identity (Keystone's v3 subset) and its token check.",
  },
  quota: {
    title: "Quotas",
    intro:
      "Nova's [quota] options: the deployment's defaults, under a project's own limits and the default quota class set through the API.",
  },
  placement: {
    title: "Placement",
    intro: "Read by `novaless-audit` (Nova's `nova-manage placement audit`).",
  },
  observability: {
    title: "Logs and metrics",
    intro: "Read by every function, the local runtime and novaless-compute.",
  },
  deployment: {
    title: "Deployment",
    intro:
      "Read by the stack when it is synthesized (`npx cdk deploy -c fleet_size=5000`, or the variable); docs/deploy.md explains the sizing.",
  },
  resources: {
    title: "Resources",
    intro:
      "The stack's tables, queues and state machine, which the stack (or the local runtime) sets on every function. Not options an operator chooses.",
  },
};

const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
const code = (s: string) => `\`${s.replaceAll("|", "\\|")}\``;

function defaultCell(o: ConfigOption): string {
  const shown = (v: ConfigOption["default"]) =>
    Array.isArray(v) ? (v.length ? code(v.join(",")) : "empty") : v === null ? "unset" : code(String(v));
  const main = o.defaultText !== undefined ? cell(o.defaultText) : shown(o.default ?? null);
  const agent = o.agent ? agentDefault(o) : undefined;
  if (o.agent && o.topic !== "compute" && agent !== undefined && agent !== o.default)
    return `${main} (novaless-compute: ${code(String(agent))})`;
  return main;
}

function envCell(o: ConfigOption): string {
  const names = [o.env, ...(o.aliases ?? [])].map(code).join(", ");
  if (o.agent && agentEnvName(o) !== o.env)
    return `${names}; *compute.conf*, ${code(agentEnvName(o))}${o.agent.flag ? `, \`--${o.agent.flag}\`` : ""}`;
  return o.agent?.flag ? `${names}, \`--${o.agent.flag}\`` : names;
}

function typeCell(o: ConfigOption): string {
  const base = o.kind.replace("?", "");
  const type = o.choices ? `${base}: ${o.choices.join(", ")}` : base;
  return o.min === undefined ? type : `${type}, ≥ ${o.min}`;
}

export function configurationDoc(): string {
  const out = [
    "# Configuration",
    "",
    "<!-- Generated from lib/config.ts by `npm run docs:config`; do not edit by hand. -->",
    "",
    "Every option, declared once in `lib/config.ts`: its group and name in nova.conf's style (Nova's,",
    "Keystone's or keystonemiddleware's where they have the option; *ours* where novaless adds it), the",
    "environment variable it is read from, its type and default. The functions, the local runtime and",
    "identity read the environment; novaless-compute reads compute.conf and the environment.",
    "Values are checked when read: an invalid one is refused with its variable named, except where the",
    "help says it is ignored.",
  ];
  for (const [topic, { title, intro }] of Object.entries(TOPICS) as [Topic, (typeof TOPICS)[Topic]][]) {
    const rows = OPTIONS.filter((o) => o.topic === topic);
    if (rows.length === 0) continue;
    out.push("", `## ${title}`, "", intro, "");
    out.push("| Option | Environment | Type | Default | |", "| --- | --- | --- | --- | --- |");
    for (const o of rows) {
      const name = `\`[${o.group}] ${o.name}\`${o.nova ? "" : " *ours*"}`;
      out.push(`| ${name} | ${envCell(o)} | ${typeCell(o)} | ${defaultCell(o)} | ${cell(o.help)} |`);
    }
  }
  return `${out.join("\n")}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [path, render] of Object.entries(GENERATED)) {
    writeFileSync(new URL(`../${path}`, import.meta.url), render());
    process.stdout.write(`wrote ${path}\n`);
  }
}
