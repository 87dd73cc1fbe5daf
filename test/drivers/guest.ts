// The guest the driver tests spawn: a tiny flavor, an image of the test's (its id names the file
// in the images cache), no metadata; a test overrides what it is about.
import type { GuestSpec } from "../../lib/compute/drivers/driver.js";

export function guestSpec(imageId: string, over: Partial<GuestSpec> = {}): GuestSpec {
  return {
    instance_uuid: crypto.randomUUID(),
    name: "vm",
    hostname: "vm",
    project_id: "p",
    user_id: "u",
    flavor: {
      id: "1",
      name: "m1.tiny",
      vcpus: 1,
      memory_mb: 64,
      root_gb: 1,
      ephemeral_gb: 0,
      swap: 0,
      extra_specs: {},
    },
    image: { id: imageId, name: "img", properties: {} },
    metadata: {},
    ...over,
  };
}
