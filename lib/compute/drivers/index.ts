// The virt driver a compute host runs, from its configuration ([DEFAULT] compute_driver).
import type { AgentConfig } from "../agent-config.js";
import { MIGRATIONS_PREFIX, s3ImageStore } from "../image-store.js";
import type { Driver } from "./driver.js";
import { ExecDriver } from "./exec.js";
import { FakeDriver } from "./fake.js";
import { LibvirtDriver } from "./libvirt.js";
import { parseBridgeMappings } from "./vif.js";

export function createDriver(c: AgentConfig): Driver {
  const host = String(c.DEFAULT.host);
  const instancesPath = String(c.DEFAULT.instances_path);
  const shutdownTimeoutSeconds = Number(c.DEFAULT.shutdown_timeout);
  const bucket = c.novaless.images_bucket ? String(c.novaless.images_bucket) : undefined;
  const imageStore = bucket ? s3ImageStore(bucket) : undefined;
  switch (c.DEFAULT.compute_driver) {
    case "fake":
      return new FakeDriver({
        host,
        buildMs: Number(c.fake.build_ms),
        failAll: Boolean(c.fake.fail_builds),
        liveMigrationMs: Number(c.fake.live_migration_ms),
      });
    case "libvirt":
      return new LibvirtDriver({
        host,
        uri: String(c.libvirt.connection_uri),
        virtType: String(c.libvirt.virt_type),
        instancesPath,
        imagesPath: String(c.libvirt.images_path),
        bridgeMappings: parseBridgeMappings(String(c.ovs.bridge_mappings ?? "")),
        linuxBridgeMappings: parseBridgeMappings(String(c.linux_bridge.bridge_mappings ?? "")),
        shutdownTimeoutSeconds,
        deviceDetach: {
          attempts: Number(c.libvirt.device_detach_attempts),
          timeoutSeconds: Number(c.libvirt.device_detach_timeout),
        },
        imageCache: {
          intervalSeconds: Number(c.image_cache.manager_interval),
          minimumAgeSeconds: Number(c.image_cache.remove_unused_original_minimum_age_seconds),
        },
        ...(bucket
          ? { imageStore, migrationStore: s3ImageStore(bucket, { prefix: MIGRATIONS_PREFIX }) }
          : {}),
      });
    default:
      return new ExecDriver({
        host,
        instancesPath,
        shutdownTimeoutSeconds,
        ...(imageStore ? { imageStore } : {}),
      });
  }
}
