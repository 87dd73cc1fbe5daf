#!/bin/sh
# The novaless guest's boot, run by busybox init from /etc/inittab (the image's initramfs is its
# whole userland; scripts/image/build.ts installs this file as /etc/init.d/novaless):
#   boot          sysinit: kernel modules, the config drive (label config-2), hostname, static
#                 addresses from network_data.json, public keys, the banner, then user_data
#   uptime        respawned: "novaless-guest uptime N" every second, N from /proc/uptime
#   power-button  busybox acpid's handler of the ACPI power button (virsh shutdown): poweroff
#   shutdown      init's shutdown action: says so on the console
# Everything it prints goes to /dev/console, which the kernel command line makes ttyS0.

PATH=/sbin:/bin:/usr/sbin:/usr/bin
export PATH
CONFIG=/mnt/config
LATEST=$CONFIG/openstack/latest

say() { echo "novaless-guest: $*"; }

# JSON (the config drive's files) flattened to lines of "path<TAB>value": objects' keys and
# arrays' indexes joined by dots, strings unescaped except \n and \t, which stay as written
# ("links.0.ethernet_mac_address<TAB>fa:16:3e:00:00:01"). busybox has no jq; awk does.
json_flat() {
  awk '
    function fail(why) { printf "json: %s at %d\n", why, pos > "/dev/stderr"; exit 1 }
    function ws() { while (pos <= n && index(" \t\r\n", substr(s, pos, 1))) pos++ }
    function hexval(h,   i, v) {
      v = 0
      for (i = 1; i <= 4; i++) v = v * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
      return v
    }
    function str(   out, c, v) {
      if (substr(s, pos, 1) != "\"") fail("string expected")
      pos++; out = ""
      while (pos <= n) {
        c = substr(s, pos, 1)
        if (c == "\"") { pos++; return out }
        if (c == "\\") {
          pos++; c = substr(s, pos, 1)
          if (c == "n") out = out "\\n"
          else if (c == "t") out = out "\\t"
          else if (c == "u") { v = hexval(substr(s, pos + 1, 4)); pos += 4; out = out (v >= 32 && v < 127 ? sprintf("%c", v) : "?") }
          else if (c == "\"" || c == "\\" || c == "/") out = out c
          pos++
          continue
        }
        out = out c; pos++
      }
      fail("unterminated string")
    }
    function value(path,   c, k, i) {
      ws(); c = substr(s, pos, 1)
      if (c == "{") {
        pos++; ws()
        if (substr(s, pos, 1) == "}") { pos++; return }
        while (1) {
          ws(); k = str(); ws()
          if (substr(s, pos, 1) != ":") fail("colon expected")
          pos++
          value(path == "" ? k : path "." k)
          ws(); c = substr(s, pos, 1); pos++
          if (c == "}") return
          if (c != ",") fail("comma expected")
        }
      }
      if (c == "[") {
        pos++; ws()
        if (substr(s, pos, 1) == "]") { pos++; return }
        for (i = 0; ; i++) {
          value(path == "" ? i : path "." i)
          ws(); c = substr(s, pos, 1); pos++
          if (c == "]") return
          if (c != ",") fail("comma expected")
        }
      }
      if (c == "\"") { print path "\t" str(); return }
      if (!match(substr(s, pos), /^[-+0-9.eEa-z]+/)) fail("value expected")
      print path "\t" substr(s, pos, RLENGTH)
      pos += RLENGTH
    }
    { s = s $0 "\n" }
    END { n = length(s); pos = 1; value("") }
  ' "$1"
}

# The value at one path of a flattened file ("" when absent).
jget() { awk -F '\t' -v k="$2" '$1 == k { print substr($0, length(k) + 2); exit }' "$1"; }

# busybox has no blkid; findfs reads ISO 9660 and FAT labels. Nova's libvirt driver attaches the
# drive as a cdrom (IDE or SATA: sr0) or a virtio disk (vd*); devices appear as their drivers
# probe them, so look for a few seconds.
find_config_drive() {
  i=0
  while [ $i -lt 50 ]; do
    dev=$(findfs LABEL=config-2 2>/dev/null) && { echo "$dev"; return 0; }
    i=$((i + 1))
    sleep 0.2
  done
  return 1
}

mount_config_drive() {
  mkdir -p $CONFIG
  dev=$(find_config_drive)
  if [ -n "$dev" ]; then
    mount -o ro "$dev" $CONFIG 2>/dev/null || mount -t iso9660 -o ro "$dev" $CONFIG 2>/dev/null ||
      mount -t vfat -o ro "$dev" $CONFIG 2>/dev/null
  fi
  # No label found (or it would not mount): try the usual places by hand.
  if [ ! -f $LATEST/meta_data.json ]; then
    for dev in /dev/sr0 /dev/sr1 /dev/vd? /dev/sd?; do
      [ -b "$dev" ] || continue
      mount -o ro "$dev" $CONFIG 2>/dev/null || continue
      [ -f $LATEST/meta_data.json ] && break
      umount $CONFIG
    done
  fi
  if [ -f $LATEST/meta_data.json ]; then
    say "config drive ${dev:-?} mounted on $CONFIG"
    return 0
  fi
  say "no config drive found (label config-2 on a cdrom or a virtio disk); block devices: $(
    ls /sys/class/block 2>/dev/null | tr '\n' ' '
  )"
  say "(this kernel reads cdroms on IDE (ata_piix) and virtio; a SATA (AHCI) cdrom needs a kernel with ahci)"
  return 1
}

# The dotted netmask's prefix length (255.255.255.0 -> 24).
prefix_of() {
  echo "$1" | awk -F. '{
    n = 0
    for (i = 1; i <= 4; i++) for (b = 128; b >= 1; b /= 2) if ($i >= b) { n++; $i -= b }
    print n
  }'
}

# The interface whose MAC is $1 (case-insensitive).
iface_of_mac() {
  want=$(echo "$1" | tr 'A-F' 'a-f')
  for dir in /sys/class/net/*; do
    [ "$(cat "$dir/address" 2>/dev/null)" = "$want" ] && { basename "$dir"; return 0; }
  done
  return 1
}

# network_data.json: each ipv4 network on the NIC whose MAC its link names, with its routes
# (0.0.0.0/0 as the default route) and the DNS servers in /etc/resolv.conf.
configure_network() {
  flat=/run/network_data.flat
  json_flat $LATEST/network_data.json >$flat || { say "network_data.json: not JSON"; return 1; }
  ip link set lo up
  j=0
  while [ -n "$(jget $flat networks.$j.id)" ]; do
    net=networks.$j
    j=$((j + 1))
    [ "$(jget $flat $net.type)" = ipv4 ] || continue
    link=$(jget $flat $net.link)
    k=0
    mac=
    while [ -n "$(jget $flat links.$k.id)" ]; do
      [ "$(jget $flat links.$k.id)" = "$link" ] && {
        mac=$(jget $flat links.$k.ethernet_mac_address)
        mtu=$(jget $flat links.$k.mtu)
        break
      }
      k=$((k + 1))
    done
    dev=$(iface_of_mac "$mac") || { say "$net: no NIC with MAC $mac (link $link)"; continue; }
    addr=$(jget $flat $net.ip_address)
    prefix=$(prefix_of "$(jget $flat $net.netmask)")
    [ -n "$mtu" ] && ip link set "$dev" mtu "$mtu"
    ip link set "$dev" up
    ip addr add "$addr/$prefix" dev "$dev" || say "$dev: could not add $addr/$prefix"
    r=0
    while [ -n "$(jget $flat $net.routes.$r.gateway)" ]; do
      route=$net.routes.$r
      r=$((r + 1))
      gw=$(jget $flat $route.gateway)
      to=$(jget $flat $route.network)/$(prefix_of "$(jget $flat $route.netmask)")
      [ "$to" = 0.0.0.0/0 ] && to=default
      ip route add "$to" via "$gw" dev "$dev" || say "$dev: could not add route $to via $gw"
    done
  done
  awk -F '\t' '$1 ~ /^services\.[0-9]+\.address$/ { print "nameserver " $2 }' $flat >/etc/resolv.conf
}

install_keys() {
  mkdir -p /root/.ssh
  chmod 700 /root/.ssh
  awk -F '\t' '$1 ~ /^public_keys\./ { print substr($0, index($0, "\t") + 1) }' "$1" |
    sed 's/\\n/\n/g' | grep -v '^[[:space:]]*$' >/root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
}

# user_data runs when it is a script, in the background so the uptime lines start regardless.
run_user_data() {
  [ -f $LATEST/user_data ] || return 0
  [ "$(head -c 2 $LATEST/user_data)" = "#!" ] || { say "user_data is not a script (no #!): not run"; return 0; }
  cp $LATEST/user_data /run/user_data
  chmod 755 /run/user_data
  say "running user_data"
  (
    /run/user_data
    say "user_data exited $?"
  ) </dev/null &
}

banner() {
  echo
  echo "  ############################################################"
  echo "  #  novaless guest"
  echo "  ############################################################"
  echo "novaless-guest uuid $1"
  echo "novaless-guest hostname $(hostname)"
  ip -o -4 addr show scope global | while read -r _ dev _ cidr _; do
    echo "novaless-guest address $dev $cidr"
  done
  echo "novaless-guest ready $(cut -d' ' -f1 /proc/uptime) s after boot"
  echo "  (no sshd; keys in /root/.ssh/authorized_keys; press Enter on this console for a shell)"
  echo
}

boot() {
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev 2>/dev/null
  mkdir -p /dev/pts /run /tmp
  mount -t devpts devpts /dev/pts
  mount -t tmpfs -o mode=755 tmpfs /run
  # In dependency order, listed by the build; a module the kernel has built in is not listed.
  while read -r module; do insmod "/lib/modules/$(uname -r)/$module" 2>/dev/null; done </etc/novaless/modules
  hostname -F /etc/hostname
  uuid=unknown
  if mount_config_drive; then
    meta=/run/meta_data.flat
    if json_flat $LATEST/meta_data.json >$meta; then
      uuid=$(jget $meta uuid)
      name=$(jget $meta hostname)
      [ -n "$name" ] && { hostname "$name" && echo "$name" >/etc/hostname; }
      install_keys $meta
    else
      say "meta_data.json: not JSON"
    fi
    [ -f $LATEST/network_data.json ] && configure_network
  fi
  banner "$uuid"
  run_user_data
}

uptime_loop() {
  while :; do
    read -r up _ </proc/uptime
    echo "novaless-guest uptime ${up%%.*}"
    sleep 1
  done
}

case "$1" in
boot) boot ;;
uptime) uptime_loop ;;
power-button)
  # acpid sends its handlers' output to its log; this line is for the console
  say "ACPI power button: powering off" >/dev/console
  poweroff
  ;;
shutdown)
  say "shutting down"
  umount $CONFIG 2>/dev/null
  ;;
*)
  echo "usage: $0 boot|uptime|power-button|shutdown" >&2
  exit 2
  ;;
esac
