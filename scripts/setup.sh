#!/usr/bin/env bash
# Install what ingot needs to build and test on a Debian machine: a C compiler, CMake, clang (fuzzer),
# and the pinned Python packages. Idempotent and quiet when everything is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v cc >/dev/null || need_apt+=(gcc)
command -v make >/dev/null || need_apt+=(make)
command -v clang >/dev/null || need_apt+=(clang)
command -v clang-format >/dev/null || need_apt+=(clang-format)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
if command -v clang >/dev/null; then
  rt=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a
  [ -f "$rt" ] || need_apt+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! python3 - "$here/tests/requirements.txt" <<'PY' 2>/dev/null
import sys, importlib.metadata as md
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line: continue
    name, ver = line.split('==')
    if md.version(name) != ver: sys.exit(1)
PY
then
  echo "setup: installing Python packages from tests/requirements.txt"
  python3 -m pip install --quiet --disable-pip-version-check -r "$here/tests/requirements.txt" 2>&1 | grep -v "as the 'root' user" || true
fi
