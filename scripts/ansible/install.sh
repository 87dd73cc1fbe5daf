#!/bin/sh
# What the openstack.cloud modules need beside Debian's ansible-core (docs/openstack-clients.md):
# - the openstack.cloud collection 2.5.0, from the `ansible` 12.3.0 release on PyPI (the wheel's
#   hash pinned), into the project's collections path .ansible/collections: Galaxy is not
#   reachable from these machines, and Debian's `ansible` carries openstack.cloud 1.10, whose
#   modules refuse any openstacksdk past 0.98.999 (Debian's is 0.101);
# - openstacksdk 4.7.1 and its pinned dependencies (requirements.txt) in a virtual environment
#   of the project's, .ansible/venv, made with Debian's Python: the modules run there
#   (ansible_python_interpreter), since 2.x asks for openstacksdk >= 1.0.
# A no-op when .ansible/ready names these versions. When something cannot be had (no
# ansible-playbook, no venv, PyPI not reachable) it says so in one line and exits 0: the Ansible
# test then says it skips, and in CI it fails.
set -u
BUNDLE=12.3.0
BUNDLE_SHA256=cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
COLLECTION=2.5.0
VERSIONS="openstack.cloud $COLLECTION (ansible $BUNDLE), openstacksdk $(grep '^openstacksdk==' "$(dirname "$0")/requirements.txt" | cut -d= -f3)"
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
dir="$top/.ansible"
venv="$dir/venv"
ready="$dir/ready"

if [ -f "$ready" ] && [ "$(cat "$ready")" = "$VERSIONS" ] && [ -x "$venv/bin/python" ]; then exit 0; fi

skip() {
  echo "ansible: openstack.cloud not installed: $1"
  rm -f "$ready"
  exit 0
}

command -v ansible-playbook >/dev/null 2>&1 || skip "no ansible-playbook (Debian's ansible-core)"

echo "ansible: installing $VERSIONS into .ansible/"
rm -rf "$venv" "$dir/collections" "$dir/download"
/usr/bin/python3 -m venv "$venv" || skip "/usr/bin/python3 -m venv failed (Debian's python3-venv)"
out=$("$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$here/requirements.txt" 2>&1) ||
  skip "could not install requirements.txt from PyPI (is it reachable?): $(printf '%s\n' "$out" | grep -v '^WARNING' | tail -1)"

# The collection as Ansible's release ships it: its directory out of the wheel, nothing else.
mkdir -p "$dir/download"
printf 'ansible==%s --hash=sha256:%s\n' "$BUNDLE" "$BUNDLE_SHA256" >"$dir/download/requirements.txt"
out=$("$venv/bin/pip" download -q --disable-pip-version-check --no-deps --require-hashes \
  -r "$dir/download/requirements.txt" -d "$dir/download" 2>&1) ||
  skip "could not download ansible $BUNDLE from PyPI: $(printf '%s\n' "$out" | grep -v '^WARNING' | tail -1)"
"$venv/bin/python" - "$dir/download/ansible-$BUNDLE-py3-none-any.whl" "$dir/collections" "$COLLECTION" <<'EOF' ||
import json, sys, zipfile
wheel, dest, version = sys.argv[1:]
prefix = "ansible_collections/openstack/cloud/"
with zipfile.ZipFile(wheel) as z:
    got = json.loads(z.read(prefix + "MANIFEST.json"))["collection_info"]["version"]
    if got != version:
        sys.exit(f"the wheel carries openstack.cloud {got}, not {version}")
    z.extractall(dest, [n for n in z.namelist() if n.startswith(prefix)])
EOF
  skip "could not take openstack.cloud $COLLECTION out of ansible $BUNDLE's wheel"
rm -rf "$dir/download"

echo "$VERSIONS" >"$ready"
echo "ansible: $VERSIONS ready ($(ansible-playbook --version | sed -n 1p))"
