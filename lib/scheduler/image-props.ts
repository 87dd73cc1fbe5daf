// Nova's ImageMetaProps as far as the scheduler reads it: the standard property names (others are
// not image metadata to Nova's filters), the pre-Liberty names they replaced, and canonical values.

/** Pre-Liberty property names and the standard names Nova maps them to. */
const LEGACY_NAMES: Readonly<Record<string, string>> = {
  architecture: "hw_architecture",
  auto_disk_config: "hw_auto_disk_config",
  hypervisor_type: "img_hv_type",
  hypervisor_version_requires: "img_hv_requested_version",
  vm_mode: "hw_vm_mode",
  owner_specified: "img_owner_specified",
};

/** ImageMetaProps' fields (Zed). */
const STANDARD = new Set([
  "hw_architecture",
  "hw_auto_disk_config",
  "hw_boot_menu",
  "hw_cdrom_bus",
  "hw_cpu_cores",
  "hw_cpu_max_cores",
  "hw_cpu_max_sockets",
  "hw_cpu_max_threads",
  "hw_cpu_policy",
  "hw_cpu_realtime_mask",
  "hw_cpu_sockets",
  "hw_cpu_thread_policy",
  "hw_cpu_threads",
  "hw_device_id",
  "hw_disk_bus",
  "hw_disk_type",
  "hw_emulation_architecture",
  "hw_ephemeral_encryption",
  "hw_ephemeral_encryption_format",
  "hw_firmware_type",
  "hw_floppy_bus",
  "hw_input_bus",
  "hw_ipxe_boot",
  "hw_locked_memory",
  "hw_machine_type",
  "hw_mem_encryption",
  "hw_mem_page_size",
  "hw_numa_cpus",
  "hw_numa_mem",
  "hw_numa_nodes",
  "hw_pci_numa_affinity_policy",
  "hw_pmu",
  "hw_pointer_model",
  "hw_qemu_guest_agent",
  "hw_rescue_bus",
  "hw_rescue_device",
  "hw_rng_model",
  "hw_scsi_model",
  "hw_serial_port_count",
  "hw_time_hpet",
  "hw_tpm_model",
  "hw_tpm_version",
  "hw_video_model",
  "hw_video_ram",
  "hw_vif_model",
  "hw_vif_multiqueue_enabled",
  "hw_viommu_model",
  "hw_virtio_packed_ring",
  "hw_vm_mode",
  "hw_watchdog_action",
  "img_bdm_v2",
  "img_bittorrent",
  "img_block_device_mapping",
  "img_cache_in_nova",
  "img_compression_level",
  "img_config_drive",
  "img_hide_hypervisor_id",
  "img_hv_requested_version",
  "img_hv_type",
  "img_linked_clone",
  "img_mappings",
  "img_owner_id",
  "img_owner_specified",
  "img_root_device_name",
  "img_signature",
  "img_signature_certificate_uuid",
  "img_signature_hash_method",
  "img_signature_key_type",
  "img_use_agent",
  "img_version",
  "os_admin_user",
  "os_command_line",
  "os_distro",
  "os_require_quiesce",
  "os_secure_boot",
  "os_skip_agent_inject_files_at_boot",
  "os_skip_agent_inject_ssh",
  "os_type",
  "traits_required",
]);

/** The image's standard properties, legacy names mapped to their standard ones (a standard name wins). */
export function imageMetaProps(properties: Readonly<Record<string, string>>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(properties)) {
    const name = LEGACY_NAMES[key] ?? key;
    if (!STANDARD.has(name)) continue;
    if (name !== key && name in properties) continue;
    out.set(name, CANONICAL[name]?.(value) ?? value);
  }
  return out;
}

/** Fields whose values ImageMetaProps canonicalizes. */
const CANONICAL: Readonly<Record<string, (v: string) => string | undefined>> = {
  hw_architecture: (v) => canonicalArchitecture(v),
  img_hv_type: (v) => canonicalHypervisorType(v),
  hw_vm_mode: (v) => canonicalVmMode(v),
};

export function isImageMetaProp(name: string): boolean {
  return STANDARD.has(name);
}

/** fields.Architecture.canonicalize (an unknown name stays as given, lowercased: it matches nothing). */
export function canonicalArchitecture(name: string | undefined | null): string | undefined {
  if (!name) return undefined;
  const n = name.toLowerCase();
  if (n === "i386" || n === "i486" || n === "i586" || n === "x86_32" || n === "x86_32p") return "i686";
  if (n === "amd64") return "x86_64";
  return n;
}

/** fields.HVType.canonicalize */
export function canonicalHypervisorType(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const n = name.toLowerCase();
  return n === "xapi" ? "xen" : n;
}

/** fields.VMMode.canonicalize */
export function canonicalVmMode(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const n = name.toLowerCase();
  if (n === "pv") return "xen";
  if (n === "hv" || n === "baremetal") return "hvm";
  return n;
}
