// Nova's IsolatedHostsFilter: [filter_scheduler] isolated_images run only on isolated_hosts and,
// with restrict_isolated_hosts_to_isolated_images (the default), isolated hosts run nothing else.
import { maskCheck } from "../checks.js";
import type { HostCheck, HostFilter, Rejection } from "../types.js";

export const IsolatedHostsFilter: HostFilter = {
  name: "IsolatedHostsFilter",
  // The configuration does not change within a request.
  runOncePerRequest: true,
  // Nova's RUN_ON_REBUILD: it judges the image, so a rebuild's new one is checked on its host
  runOnRebuild: true,
  prepare(spec, ctx) {
    const {
      isolated_hosts,
      isolated_images,
      restrict_isolated_hosts_to_isolated_images: restrict,
    } = ctx.config;
    const mask = ctx.fleet.named(isolated_hosts);
    /** passes when the host's isolation is `isolated` */
    const only = (isolated: boolean, rejection: Rejection): HostCheck =>
      maskCheck(mask, isolated ? 1 : 0, rejection);
    if (isolated_images.length === 0) {
      // No images to match: isolated hosts are out when restricted, else everyone passes.
      if (!restrict || isolated_hosts.length === 0) return null;
      return only(false, { summary: "are isolated hosts", reason: "host is isolated and no image is" });
    }
    const imageIsolated = isolated_images.includes(spec.image.id);
    if (imageIsolated) {
      return only(true, { summary: "are not isolated hosts", reason: `image ${spec.image.id} is isolated` });
    }
    if (!restrict) return null;
    const isolated = {
      summary: "are isolated hosts",
      reason: `host is isolated, image ${spec.image.id} is not`,
    };
    return only(false, isolated);
  },
};
