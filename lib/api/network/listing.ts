// Neutron's lists (api/v2/base.py _items, api/api_common.py): each query parameter an attribute to
// filter on (repeated ones any of their values), `fields` to show, and paging by id: `limit`, the
// `marker` (the last id seen) and `page_reverse`, with `<collection>_links` to the next and the
// previous page. The query is checked with zod, through Hono's validator.
import type { Context } from "hono";
import { z } from "zod";
import { normalizeAddress } from "../../network/cidr.js";
import type { AuthContext } from "../auth.js";
import { Refusal } from "../errors.js";
import { type FrontEnv, queryOf } from "../front.js";
import { selectFields } from "./views.js";

/** The parameters that are not filters (api_common.get_filters' skips). */
const NOT_FILTERS = new Set(["fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse"]);

/** The query of a list, as the route reads it. */
export interface ListQuery {
  filters: [string, string[]][];
  fields: string[];
  /** undefined: no paging (no limit, or 0, as Neutron's pagination_max_limit default) */
  limit?: number;
  marker?: string;
  pageReverse: boolean;
}

const last = (v: string[] | undefined) => v?.[v.length - 1];

/**
 * With Neutron's filter-validation (on by default), a parameter that is no attribute of the
 * resource is its 400 (api_common.get_filters_from_dict, the keys as a Python list); a limit that
 * is no integer of 0 or more is neutron-lib's BadRequest.
 */
const listQuery = (attributes: readonly string[]) =>
  z.record(z.string(), z.array(z.string())).transform((q, ctx): ListQuery => {
    const invalid = Object.keys(q).filter((k) => !NOT_FILTERS.has(k) && !attributes.includes(k));
    if (invalid.length) {
      ctx.addIssue({
        code: "custom",
        message: `[${invalid.map((k) => `'${k}'`).join(", ")}] is invalid attribute for filtering`,
        params: { type: "HTTPBadRequest" },
      });
      return z.NEVER;
    }
    // webob's GET.get: the last of a repeated parameter
    const limitText = last(q.limit) ?? "0";
    const limit = /^\s*[+-]?\d+\s*$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 0)) {
      ctx.addIssue({
        code: "custom",
        message: `Bad limit request: Limit must be an integer 0 or greater and not '${limitText}'.`,
        params: { type: "BadRequest" },
      });
      return z.NEVER;
    }
    return {
      filters: Object.entries(q).filter(([k]) => !NOT_FILTERS.has(k)),
      fields: q.fields ?? [],
      ...(limit > 0 ? { limit, marker: last(q.marker) } : {}),
      pageReverse: (last(q.page_reverse) ?? "False").toLowerCase() === "true",
    };
  });

/** A list route's query validator: c.req.valid("query") is its ListQuery. */
export const listParams = (attributes: readonly string[]) =>
  queryOf(
    listQuery(attributes),
    (f) => new Refusal(400, f.issue.message, (f.issue as { params?: { type?: string } }).params?.type),
  );

/** The caller every attribute is shown to, for filtering. */
const ADMIN_VIEW: AuthContext = { user_id: "", project_id: "", roles: ["admin"], isAdmin: true };

/** `fixed_ips=ip_address=10.0.0.5` or `fixed_ips=subnet_id=<id>` (Neutron's port filter). */
function fixedIpMatches(fixedIps: unknown, filter: string): boolean {
  const [key, value] = filter.split("=", 2);
  const ips = (fixedIps ?? []) as Record<string, string>[];
  if (key === "ip_address") return ips.some((f) => f.ip_address === (normalizeAddress(value ?? "") ?? value));
  if (key === "subnet_id") return ips.some((f) => f.subnet_id === value);
  return true;
}

/** A list in Neutron's order, by id (its native pagination's sort key). */
export const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);

/**
 * One page of the items (sorted by id), as Neutron's native pagination reads it: those after the
 * marker (before it, paging in reverse), at most `limit`, in id order either way.
 */
function page<T extends { id: string }>(items: T[], q: ListQuery): T[] {
  if (q.limit === undefined) return items;
  const { marker, limit } = q;
  if (q.pageReverse) {
    const before = marker === undefined ? items : items.filter((i) => byId(i, { id: marker }) < 0);
    return before.slice(Math.max(0, before.length - limit));
  }
  const after = marker === undefined ? items : items.filter((i) => byId(i, { id: marker }) > 0);
  return after.slice(0, limit);
}

/** webob's path_url and urlencode of the request's parameters, as api_common builds the links. */
function href(c: Context<FrontEnv>, params: [string, string][]): string {
  const url = new URL(c.req.url);
  const base = `${c.get("baseUrl")}${url.pathname}`;
  return `${base}?${new URLSearchParams(params).toString()}`;
}

/**
 * api_common.get_pagination_links: a page as long as the limit has a next (its last id the
 * marker); every page but a short one read in reverse has a previous (its first id, in reverse).
 */
function pageLinks(c: Context<FrontEnv>, items: { id: string }[], q: ListQuery) {
  if (q.limit === undefined) return [];
  const params = [...new URL(c.req.url).searchParams.entries()];
  const without = (...names: string[]) => params.filter(([k]) => !names.includes(k));
  const links: { rel: string; href: string }[] = [];
  const first = items[0]?.id;
  const lastId = items[items.length - 1]?.id;
  if (!(items.length < q.limit && !q.pageReverse))
    links.push({
      rel: "next",
      href: href(c, [
        ...without("marker", "page_reverse"),
        ...(lastId ? [["marker", lastId] as [string, string]] : []),
      ]),
    });
  if (!(items.length < q.limit && q.pageReverse))
    links.push({
      rel: "previous",
      href: href(c, [
        ...without("marker", "page_reverse"),
        ...(first ? [["marker", first] as [string, string]] : []),
        ["page_reverse", "True"],
      ]),
    });
  return links;
}

/**
 * A list's answer: the items the caller sees that match the filters (Neutron filters in its
 * database, before policy hides attributes: a member's filter on provider:network_type matches as
 * an admin's would), one page of them with the fields asked, and the links to the pages beside.
 * A marker the caller cannot see is the resource's 404 (the plugin's _get_marker_obj).
 */
export async function listed<T extends { id: string }>(
  c: Context<FrontEnv>,
  collection: string,
  items: T[],
  view: (item: T, auth: AuthContext) => Record<string, unknown>,
  q: ListQuery,
  markerNotFound: (id: string) => Refusal,
  /** whether the caller sees the marker's resource (by default: it is among the items) */
  seesMarker: (id: string) => boolean | Promise<boolean> = (id) => items.some((i) => i.id === id),
) {
  if (q.limit !== undefined && q.marker !== undefined && !(await seesMarker(q.marker)))
    throw markerNotFound(q.marker);
  const auth = c.get("auth");
  const matches = (v: Record<string, unknown>) =>
    q.filters.every(([k, wanted]) => {
      if (k === "fixed_ips") return wanted.every((w) => fixedIpMatches(v.fixed_ips, w));
      const have = v[k];
      // a list attribute (a port's security_groups) matches when it holds one of the values
      if (Array.isArray(have)) return wanted.some((w) => have.includes(w));
      return wanted.some((w) =>
        typeof have === "boolean" ? String(have) === w.toLowerCase() : String(have ?? "") === w,
      );
    });
  const shown = page(
    items.filter((i) => matches(view(i, ADMIN_VIEW))),
    q,
  );
  const links = pageLinks(c, shown, q);
  return c.json({
    [collection]: shown.map((i) => selectFields(view(i, auth), q.fields)),
    ...(links.length ? { [`${collection}_links`]: links } : {}),
  });
}
