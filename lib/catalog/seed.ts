import type { Flavor, Image } from "./types.js";

function flavor(id: string, name: string, vcpus: number, memory_mb: number, root_gb: number): Flavor {
  return {
    id,
    name,
    vcpus,
    memory_mb,
    root_gb,
    ephemeral_gb: 0,
    swap: 0,
    rxtx_factor: 1.0,
    is_public: true,
    disabled: false,
    extra_specs: {},
    description: null,
  };
}

/** Nova's classic flavors, ids 1–5 (vcpus / MB / GB). */
export const SEED_FLAVORS: Flavor[] = [
  flavor("1", "m1.tiny", 1, 512, 1),
  flavor("2", "m1.small", 1, 2048, 20),
  flavor("3", "m1.medium", 2, 4096, 40),
  flavor("4", "m1.large", 4, 8192, 80),
  flavor("5", "m1.xlarge", 8, 16384, 160),
];

const created = "2026-01-01T00:00:00Z";

/** Fixed ids so docs and tests can name them; the API also accepts the image name. */
export const SEED_IMAGES: Image[] = [
  {
    id: "a1b2c3d4-0000-4000-8000-000000000001",
    name: "cirros",
    status: "active",
    min_disk: 0,
    min_ram: 0,
    properties: { architecture: "x86_64", hypervisor_type: "fake", vm_mode: "hvm" },
    created_at: created,
  },
  {
    id: "a1b2c3d4-0000-4000-8000-000000000002",
    name: "ubuntu",
    status: "active",
    min_disk: 0,
    min_ram: 0,
    properties: { architecture: "x86_64", hypervisor_type: "fake", vm_mode: "hvm", os_distro: "ubuntu" },
    created_at: created,
  },
  {
    id: "a1b2c3d4-0000-4000-8000-000000000003",
    name: "broken",
    status: "active",
    min_disk: 0,
    min_ram: 0,
    // The fake driver fails every spawn of an image with this property, on any host.
    properties: { architecture: "x86_64", "novaless:fake_build_fails": "true" },
    created_at: created,
  },
  {
    // For the exec driver (`npm start -- --driver exec`): each server is this process.
    id: "a1b2c3d4-0000-4000-8000-000000000004",
    name: "sleeper",
    status: "active",
    min_disk: 0,
    min_ram: 0,
    properties: {
      architecture: "x86_64",
      hypervisor_type: "exec",
      "novaless:exec_command": `sh -c 'echo "sleeper $NOVALESS_INSTANCE_UUID up"; exec sleep 2147483647'`,
    },
    created_at: created,
  },
];
