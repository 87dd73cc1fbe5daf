// Glance's PATCH applied to an image (ImagesController.update: _do_add, _do_replace, _do_remove),
// without I/O: each change's policies (modify_image, and a visibility's own), then the change on a
// copy of the image, Glance's refusals in its order and with its texts, and the
// image_property_quota; what comes out is one write for changeImage (lib/catalog/image-create.ts).
// Nova's image metadata proxy goes through it as Nova's glance client patches Glance.
import { extraProperties, FORMAT_PROPERTIES, type ImageChange } from "../../catalog/image-create.js";
import type { Image, ImageVisibility } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { Refusal } from "../errors.js";
import { type GlanceRule, glanceDecision, glanceRefusal } from "../policy.js";
import type { ImagePatch } from "./validation.js";

/** Glance's image_property_quota, its default (glance/common/config.py): extra properties per image. */
export const IMAGE_PROPERTY_QUOTA = 128;

/** Glance's reserved namespace, which the property quota does not count. */
const RESERVED_NS = "os_glance";

/** Glance's ImagePropertyLimitExceeded (413), when `properties` are more than the quota allows. */
export function checkPropertyQuota(properties: Record<string, string>): void {
  const attempted = Object.keys(properties).filter((k) => !k.startsWith(RESERVED_NS)).length;
  if (attempted > IMAGE_PROPERTY_QUOTA)
    throw new Refusal(
      413,
      `The limit has been exceeded on the number of allowed image properties. Attempted: ${attempted}, Maximum: ${IMAGE_PROPERTY_QUOTA}`,
    );
}

/** Glance's policy check on an image it lets the caller see: 403 with its text, or 404. */
export function enforceOnImage(auth: AuthContext, rule: GlanceRule, image: Pick<Image, "owner">): void {
  const d = glanceDecision(auth, rule, { owner: image.owner ?? null });
  if (d === 403) throw new Refusal(403, glanceRefusal(rule));
  if (d === 404) throw new Refusal(404, "The resource could not be found.");
}

/** The visibility's own rule, before modify_image (ImageAPIPolicy._enforce_visibility). */
export function visibilityRule(visibility: unknown): GlanceRule | undefined {
  if (visibility === "public") return "publicize_image";
  if (visibility === "community") return "communitize_image";
  return undefined;
}

/** The attributes of Glance's image a PATCH sets on the catalog's record. */
interface Attributes {
  name: string;
  visibility: ImageVisibility;
  min_ram: number;
  min_disk: number;
  owner: string | undefined;
  disk_format: string | undefined;
  container_format: string | undefined;
}

/** What Glance's image has that the catalog does not keep: only their defaults are taken. */
const UNKEPT = new Set(["protected", "os_hidden", "tags"]);

/**
 * The write that Glance's PATCH of `image` makes, or undefined when it changes nothing.
 * `queuedOnly`: a format changed, which Glance allows only while the image is queued (the write
 * is conditioned on it).
 */
export function patchImage(
  image: Image,
  patches: ImagePatch[],
  auth: AuthContext,
  now: Date,
): { change: ImageChange; queuedOnly: boolean } | undefined {
  const before: Attributes = {
    name: image.name,
    visibility: image.visibility ?? "public",
    min_ram: image.min_ram,
    min_disk: image.min_disk,
    owner: image.owner,
    disk_format: image.properties.disk_format,
    container_format: image.properties.container_format,
  };
  const attrs: Attributes = { ...before };
  const extras = extraProperties(image);
  const has = (path: string) => path in attrs || UNKEPT.has(path) || Object.hasOwn(extras, path);
  const set = (path: string, value: unknown) => {
    if (UNKEPT.has(path)) return;
    if (!(path in attrs)) {
      extras[path] = value as string;
      return;
    }
    if ((path === "disk_format" || path === "container_format") && image.status !== "queued")
      throw new Refusal(403, `Attribute ${path} can be only replaced for a queued image.`);
    const v = path === "min_ram" || path === "min_disk" ? Number(value ?? 0) : (value ?? undefined);
    (attrs as unknown as Record<string, unknown>)[path] = path === "name" ? (v ?? "") : v;
  };
  for (const p of patches) {
    if (p.path === "locations") {
      // show_multiple_locations is off (Glance's default): locations are never shown nor set
      const verb = p.op === "remove" ? "remove" : p.op === "add" ? "add" : "update";
      throw new Refusal(403, `It's not allowed to ${verb} locations if locations are invisible.`);
    }
    if (p.op === "replace" && p.path === "owner" && !auth.isAdmin)
      throw new Refusal(403, "Owner can't be updated by non admin.");
    // api_pol.update_property: a visibility's rule, then modify_image
    if (p.path === "visibility" && p.op !== "remove") {
      const rule = visibilityRule(p.value);
      if (rule) enforceOnImage(auth, rule, image);
    }
    enforceOnImage(auth, "modify_image", image);
    if (p.op === "replace") {
      if (!has(p.path)) throw new Refusal(409, `Property ${p.path} does not exist.`);
      set(p.path, p.value);
    } else if (p.op === "add") {
      if (p.draft === 4 && has(p.path)) throw new Refusal(409, `Property ${p.path} already present.`);
      set(p.path, p.value);
    } else {
      if (p.path in attrs || UNKEPT.has(p.path))
        throw new Refusal(403, `Property ${p.path} may not be removed.`);
      if (!Object.hasOwn(extras, p.path)) throw new Refusal(409, `Property ${p.path} does not exist.`);
      delete extras[p.path];
    }
  }
  if (!patches.length) return undefined;
  const original = extraProperties(image);
  if (Object.keys(extras).some((k) => !Object.hasOwn(original, k))) checkPropertyQuota(extras);

  const change: ImageChange = { updated_at: now.toISOString() };
  const setProps: Record<string, string> = {};
  const removed = Object.keys(original).filter((k) => !Object.hasOwn(extras, k));
  for (const [k, v] of Object.entries(extras)) if (original[k] !== v) setProps[k] = v;
  for (const k of FORMAT_PROPERTIES) {
    if (attrs[k] === before[k]) continue;
    if (attrs[k] === undefined) removed.push(k);
    else setProps[k] = attrs[k];
  }
  if (Object.keys(setProps).length) change.set = setProps;
  if (removed.length) change.remove = removed;
  if (attrs.name !== before.name) change.name = attrs.name;
  if (attrs.visibility !== before.visibility) change.visibility = attrs.visibility;
  if (attrs.min_ram !== before.min_ram) change.min_ram = attrs.min_ram;
  if (attrs.min_disk !== before.min_disk) change.min_disk = attrs.min_disk;
  if (attrs.owner !== before.owner && attrs.owner !== undefined) change.owner = attrs.owner;
  const queuedOnly = FORMAT_PROPERTIES.some((k) => attrs[k] !== before[k]);
  return { change, queuedOnly };
}
