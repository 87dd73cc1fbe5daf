// GET / and GET /v2.1: the version documents clients discover the API with.
import type { Link } from "./format.js";

export const API_VERSION = "2.96";
export const MIN_API_VERSION = "2.1";
const UPDATED = "2013-07-23T11:33:21Z";

function v21(baseUrl: string): {
  id: string;
  status: string;
  version: string;
  min_version: string;
  updated: string;
  links: Link[];
} {
  return {
    id: "v2.1",
    status: "CURRENT",
    version: API_VERSION,
    min_version: MIN_API_VERSION,
    updated: UPDATED,
    links: [{ rel: "self", href: `${baseUrl}/v2.1/` }],
  };
}

export function versionsView(baseUrl: string): unknown {
  return { versions: [v21(baseUrl)] };
}

export function versionView(baseUrl: string): unknown {
  const v = v21(baseUrl);
  return {
    version: {
      ...v,
      links: [...v.links, { rel: "describedby", type: "text/html", href: "http://docs.openstack.org/" }],
      "media-types": [
        { base: "application/json", type: "application/vnd.openstack.compute+json;version=2.1" },
      ],
    },
  };
}
