// Nova's AggregateImagePropertiesIsolation: where a host's aggregates set a metadata key that is
// a standard image property (optionally only keys in aggregate_image_properties_isolation_namespace),
// an image setting that property must have one of the aggregates' values. Hosts in no such
// aggregate take any image.

import { aggregateMetadataByHost } from "../aggregates.js";
import { imageMetaProps, isImageMetaProp } from "../image-props.js";
import type { HostFilter } from "../types.js";

export const AggregateImagePropertiesIsolation: HostFilter = {
  name: "AggregateImagePropertiesIsolation",
  // Aggregate data and the image do not change within a request.
  runOncePerRequest: true,
  // Nova's RUN_ON_REBUILD: it judges the image, so a rebuild's new one is checked on its host
  runOnRebuild: true,
  reads: {
    host: "aggregates",
    spec: ["image.properties"],
    config: [
      "aggregate_image_properties_isolation_namespace",
      "aggregate_image_properties_isolation_separator",
    ],
  },
  prepare(spec, ctx) {
    const props = imageMetaProps(spec.image.properties);
    if (props.size === 0) return null;
    const ns = ctx.config.aggregate_image_properties_isolation_namespace;
    const prefix = ns ? `${ns}${ctx.config.aggregate_image_properties_isolation_separator}` : "";
    return (host) => {
      for (const [key, options] of aggregateMetadataByHost(host.aggregates)) {
        if (prefix && !key.startsWith(prefix)) continue;
        // Nova reads the key as an ImageMetaProps field: others are not image properties.
        if (!isImageMetaProp(key)) continue;
        const prop = props.get(key);
        if (prop && !options.has(prop)) {
          return {
            summary: `are in an aggregate isolating image property ${key}`,
            reason: `the host's aggregates take ${key} in ${[...options].join(",")}, the image has ${prop}`,
          };
        }
      }
      return null;
    };
  },
};
