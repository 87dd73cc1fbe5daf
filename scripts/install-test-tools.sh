#!/bin/sh
# The real OpenStack clients and tempest that test/clients and test/tempest drive, and libvirt's
# virsh (its test:///default driver) and genisoimage (config drives) that test/drivers drive, and
# chromium and firefox-esr, the real browsers test/console drives (puppeteer-core; no browser
# download), Debian's ansible-core and python3-venv for the openstack.cloud playbook
# (examples/ansible, test/clients/ansible.test.ts; scripts/ansible/install.sh adds the collection
# and its openstacksdk), and what real guests need: the guest image's kernel, busybox and syslinux
# (npm run image:build), QEMU, libvirtd and nftables (test/image, the libvirt hosts). A no-op when they are all present; as root on Debian/Ubuntu it installs what is
# missing (CI runs `npm test` as root on a clean machine); anywhere else it says which tool is
# missing and that its tests skip.
set -u

# LocalStack, in a virtual environment of the project's (its own script says what it did, or why not)
sh "$(dirname "$0")/localstack/install.sh"

missing_tools() {
  missing=""
  command -v openstack >/dev/null 2>&1 || missing="$missing openstack"
  command -v nova >/dev/null 2>&1 || missing="$missing nova"
  /usr/bin/python3 -c 'import openstack' >/dev/null 2>&1 || missing="$missing openstacksdk"
  command -v tempest >/dev/null 2>&1 || missing="$missing tempest"
  command -v ansible-playbook >/dev/null 2>&1 || missing="$missing ansible-core"
  /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$missing python3-venv"
  command -v virsh >/dev/null 2>&1 || missing="$missing virsh"
  command -v genisoimage >/dev/null 2>&1 || missing="$missing genisoimage"
  command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
  command -v firefox-esr >/dev/null 2>&1 || command -v firefox >/dev/null 2>&1 || missing="$missing firefox"
  # the guest image (npm run image:build) and real guests (test/image, test/drivers/libvirt-qemu,
  # test/e2e/libvirt-guests): a kernel, busybox, syslinux on FAT, QEMU and libvirtd
  ls /boot/vmlinuz-*-cloud-amd64 >/dev/null 2>&1 || missing="$missing linux-image-cloud-amd64"
  [ -x /bin/busybox ] || missing="$missing busybox-static"
  command -v syslinux >/dev/null 2>&1 || missing="$missing syslinux"
  [ -f /usr/lib/syslinux/mbr/mbr.bin ] || missing="$missing syslinux-common"
  command -v mkfs.vfat >/dev/null 2>&1 || missing="$missing dosfstools"
  command -v mcopy >/dev/null 2>&1 || missing="$missing mtools"
  command -v qemu-img >/dev/null 2>&1 || missing="$missing qemu-utils"
  command -v qemu-system-x86_64 >/dev/null 2>&1 || missing="$missing qemu-system-x86"
  [ -x /usr/sbin/libvirtd ] || missing="$missing libvirtd"
  command -v ping >/dev/null 2>&1 || missing="$missing ping"
  command -v ip >/dev/null 2>&1 || missing="$missing ip"
  # the libvirt hosts' security groups (nftables rules on the guests' taps)
  command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing="$missing nft"
  echo "$missing"
}

missing=$(missing_tools)
if [ -n "$missing" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-test-tools: missing:$missing; installing the Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -q && apt-get install -y -q --no-install-recommends \
    python3-openstackclient python3-novaclient python3-openstacksdk tempest ansible-core python3-venv \
    libvirt-clients genisoimage chromium firefox-esr fonts-dejavu-core \
    linux-image-cloud-amd64 busybox-static syslinux syslinux-common dosfstools mtools \
    qemu-utils qemu-system-x86 libvirt-daemon-system libvirt-daemon-driver-qemu iproute2 iputils-ping \
    nftables; then
    missing=$(missing_tools)
  fi
fi

for tool in $missing; do
  echo "install-test-tools: $tool is missing (not root on Debian with apt, or the install failed): its tests will skip"
done

# The openstack.cloud collection and its openstacksdk, in the project's .ansible/ (its own script
# says what it did, or why not); after apt, as it needs ansible-core and python3-venv
sh "$(dirname "$0")/ansible/install.sh"
exit 0
