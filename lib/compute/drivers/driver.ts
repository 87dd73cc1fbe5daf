import type { FlavorSpec, ImageSpec } from "../../scheduler/types.js";

export interface GuestSpec {
  instance_uuid: string;
  flavor: FlavorSpec;
  image: ImageSpec;
}

/** What the compute agent needs of a hypervisor (Nova's virt driver, reduced). */
export interface Driver {
  readonly hypervisorType: string;
  readonly hypervisorVersion: number;
  /**
   * Resolves when the guest runs; rejects with BuildFailure when it cannot be built. An aborted
   * `signal` stops the spawn and leaves no guest behind.
   */
  spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void>;
  /** Idempotent: destroying what is not there is a no-op. */
  destroy(instanceUuid: string): Promise<void>;
  has(instanceUuid: string): boolean;
  list(): string[];
}

/** Nova's RescheduledException: this host could not build it; another one may. */
export class BuildFailure extends Error {
  override name = "BuildFailure";
}
