import { setTimeout as sleep } from "node:timers/promises";
import { BuildFailure, type Driver, type GuestSpec } from "./driver.js";

/** Images with this property fail every build, on any host (the seeded `broken` image). */
export const FAKE_FAIL_PROPERTY = "novaless:fake_build_fails";

export interface FakeDriverOptions {
  host: string;
  /** how long a spawn takes */
  buildMs: number;
  /** this host fails every build (a "black hole" host) */
  failAll: boolean;
}

/** Nova's fake virt driver: guests are entries in a map; spawning takes buildMs. */
export class FakeDriver implements Driver {
  readonly hypervisorType = "fake";
  readonly hypervisorVersion = 1000;
  private readonly guests = new Map<string, GuestSpec>();
  /** spawns started per instance: tests use it to prove nothing was built twice */
  readonly spawns = new Map<string, number>();

  constructor(private readonly opts: FakeDriverOptions) {}

  async spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void> {
    this.spawns.set(guest.instance_uuid, (this.spawns.get(guest.instance_uuid) ?? 0) + 1);
    if (this.opts.buildMs > 0) {
      try {
        await sleep(this.opts.buildMs, undefined, { signal });
      } catch {
        throw new BuildFailure(`spawn on ${this.opts.host} interrupted: the host is stopping`);
      }
    }
    if (this.opts.failAll) {
      throw new BuildFailure(`fake driver on ${this.opts.host} is set to fail every build`);
    }
    if (guest.image.properties[FAKE_FAIL_PROPERTY] === "true") {
      throw new BuildFailure(
        `image ${guest.image.name} (${guest.image.id}) cannot be booted by the fake driver`,
      );
    }
    this.guests.set(guest.instance_uuid, guest);
  }

  async destroy(instanceUuid: string): Promise<void> {
    this.guests.delete(instanceUuid);
  }

  has(instanceUuid: string): boolean {
    return this.guests.has(instanceUuid);
  }

  list(): string[] {
    return [...this.guests.keys()];
  }
}
