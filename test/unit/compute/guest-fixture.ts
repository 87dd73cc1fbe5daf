// The guest the host-side unit tests build, move and report on: the driver tests' guest
// (test/drivers/guest.ts) as an m1.tiny of 512 MB of a cirros image, with its own uuid, unless a
// test gives other flavor figures.
import type { GuestSpec } from "../../../lib/compute/drivers/driver.js";
import type { FlavorSpec } from "../../../lib/messages/common.js";
import { guestSpec as driverGuest } from "../../drivers/guest.js";

export function guestSpec(instanceUuid: string, flavor: Partial<FlavorSpec> = {}): GuestSpec {
  const g = driverGuest("i", {
    instance_uuid: instanceUuid,
    image: { id: "i", name: "cirros", properties: {} },
  });
  return { ...g, flavor: { ...g.flavor, memory_mb: 512, ...flavor } };
}
