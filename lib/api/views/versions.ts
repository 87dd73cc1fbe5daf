// GET /, GET /v2.1 and GET /v2: the version documents clients discover the API with, as Nova's
// versions.py and versionsV21.py build them from its VERSIONS table.
import type { Link } from "./format.js";

export const API_VERSION = "2.96";
export const MIN_API_VERSION = "2.1";

interface Version {
  id: "v2.0" | "v2.1";
  status: string;
  version: string;
  min_version: string;
  updated: string;
  /** the path its documents are served at, and its self links name */
  path: string;
  /** the media type its version document names */
  mediaType: string;
}

/**
 * Nova's VERSIONS at microversion 2.96: the legacy v2.0 (its compatible endpoint, /v2, without
 * microversions) listed as SUPPORTED beside v2.1. Tempest checks v2.0 comes first, as Nova lists
 * them sorted by id. novaless serves /v2's version document only, not the legacy API under it.
 */
const VERSIONS: readonly Version[] = [
  {
    id: "v2.0",
    status: "SUPPORTED",
    version: "",
    min_version: "",
    updated: "2011-01-21T11:33:21Z",
    path: "/v2",
    mediaType: "application/vnd.openstack.compute+json;version=2",
  },
  {
    id: "v2.1",
    status: "CURRENT",
    version: API_VERSION,
    min_version: MIN_API_VERSION,
    updated: "2013-07-23T11:33:21Z",
    path: "/v2.1",
    mediaType: "application/vnd.openstack.compute+json;version=2.1",
  },
];

const self = (v: Version, baseUrl: string): Link => ({ rel: "self", href: `${baseUrl}${v.path}/` });

function entry(v: Version, baseUrl: string) {
  const { id, status, version, min_version, updated } = v;
  return { id, status, version, min_version, updated, links: [self(v, baseUrl)] };
}

/** GET /: every version (Nova's build_versions). */
export function versionsView(baseUrl: string): unknown {
  return { versions: VERSIONS.map((v) => entry(v, baseUrl)) };
}

/** One version's document (Nova's build_version): its self link first, then the docs. */
function versionDocument(id: Version["id"], baseUrl: string): unknown {
  const v = VERSIONS.find((x) => x.id === id)!;
  const e = entry(v, baseUrl);
  return {
    version: {
      ...e,
      links: [...e.links, { rel: "describedby", type: "text/html", href: "http://docs.openstack.org/" }],
      "media-types": [{ base: "application/json", type: v.mediaType }],
    },
  };
}

/** GET /v2.1. */
export const versionView = (baseUrl: string): unknown => versionDocument("v2.1", baseUrl);

/** GET /v2: the legacy endpoint's document (Nova's VersionsV2 for a legacy v2 request). */
export const legacyVersionView = (baseUrl: string): unknown => versionDocument("v2.0", baseUrl);
