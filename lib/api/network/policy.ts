// Neutron's default policies (neutron/conf/policies/{network,subnet,port}.py, the new defaults:
// enforce_new_defaults on, project scope) for what the front serves, and the text oslo.policy's
// PolicyNotAuthorized gives: the rule Neutron builds (policy.py _build_match_rule) is the action's
// rule AND-ed with one rule per attribute the body sets that has enforce_policy, in the resource's
// attribute order, each AndCheck printed "(a and b)"; a list of dicts (fixed_ips) adds its keys'
// rules ("rule:create_port:fixed_ips:ip_address").
import type { Network } from "../../network/store/table.js";
import type { AuthContext } from "../auth.js";
import { Refusal } from "../errors.js";
import { allows } from "../policy.js";

export const isAdmin = (auth: AuthContext) => auth.isAdmin;
/** ADMIN_OR_PROJECT_MEMBER, on the project owning the target. */
export const memberOf = (auth: AuthContext, project: string) => allows(auth, "member", project);
/** ADMIN_OR_PROJECT_READER, on the project owning the target. */
export const readerOf = (auth: AuthContext, project: string) => allows(auth, "reader", project);

/** get_network: an admin, the owner's readers, anyone for a shared or external network. */
export const seesNetwork = (auth: AuthContext, n: Network) =>
  readerOf(auth, n.project_id) || n.shared === true || n["router:external"] === true;

/** One attribute's rule in the refusal's text: its name, or a list's keys under it. */
export type AttributeRule = { name: string; keys?: string[] };

/** The rule text oslo.policy prints for an action and the attributes a body set. */
export function ruleText(action: string, attributes: readonly AttributeRule[]): string {
  let rule = `rule:${action}`;
  for (const a of attributes) {
    let attr = `rule:${action}:${a.name}`;
    if (a.keys?.length)
      attr = `(${attr} and (${a.keys.map((k) => `rule:${action}:${a.name}:${k}`).join(" and ")}))`;
    rule = `(${rule} and ${attr})`;
  }
  return rule;
}

/** Neutron's 403: oslo.policy's PolicyNotAuthorized. */
export const policyRefused = (action: string, attributes: readonly AttributeRule[] = []) =>
  new Refusal(403, `${ruleText(action, attributes)} is disallowed by policy`, "PolicyNotAuthorized");

/**
 * What Neutron answers when the caller may not act on another project's resource it can see
 * (api/v2/base.py: "To avoid giving away information, pretend that we couldn't find the
 * resource"): webob's 404, Neutron's text.
 */
export const pretendNotFound = () => new Refusal(404, "The resource could not be found.", "HTTPNotFound");
