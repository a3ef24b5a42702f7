#!/usr/bin/env bash
# Install what ingot needs to build and test on a Debian machine: a C compiler, CMake, clang (fuzzer),
# clang-format, pkg-config, and the pinned Python packages (tests/requirements.txt) in a virtual
# environment, .venv/ in the repository (INGOT_VENV overrides), made once. Idempotent and quiet when
# everything is already there; any failed install stops it with a message and a non-zero exit.
#
# The scripts that run Python tools (demo.sh, test.sh, tests/run_all.sh) put the venv's bin/ first on
# PATH when it exists, so their python3 is the venv's. scripts/gpu_check.sh does not: the GPU machine
# has no package registry and brings torch, onnx and onnxruntime in its system python3.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${INGOT_VENV:-$here/.venv}

die() {
  echo "setup: FAILED: $*" >&2
  exit 1
}
apt_install() { # apt_install PACKAGE...: quiet, but the errors shown when it fails
  echo "setup: installing $* (apt-get)"
  local SUDO="" log
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  log=$(mktemp)
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    die "apt-get install $* did not succeed (output above)"
  fi
  rm -f "$log"
}

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v cc >/dev/null || need_apt+=(gcc)
command -v make >/dev/null || need_apt+=(make)
command -v clang >/dev/null || need_apt+=(clang)
command -v clang-format >/dev/null || need_apt+=(clang-format)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v python3 >/dev/null || need_apt+=(python3 python3-venv)
if command -v clang >/dev/null; then
  rt=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a
  [ -f "$rt" ] || need_apt+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
fi
[ ${#need_apt[@]} -eq 0 ] || apt_install "${need_apt[@]}"
# Chromium renders the diagnostics report in CI (tests/report/); scripts/test.sh asks for it
# (INGOT_SETUP_BROWSER=1), the demo does not. Without it that check skips with a message, so a failed
# install only warns
if [ "${INGOT_SETUP_BROWSER:-0}" = 1 ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "setup: installing chromium (apt-get; for tests/report's headless rendering)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } \
    >/dev/null 2>&1; then
    echo "setup: warning: chromium could not be installed: tests/report skips its browser checks" >&2
  fi
fi

# ---- the virtual environment: made once; remade when its interpreter no longer starts -------------
if [ -e "$venv" ] && ! "$venv/bin/python3" -c 'import sys' >/dev/null 2>&1; then
  echo "setup: $venv is broken (its python3 does not start): making it again"
  rm -rf "$venv"
fi
if [ ! -e "$venv" ]; then
  echo "setup: making the Python virtual environment $venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian splits venv (and ensurepip) out of python3: python3-venv, or python3.X-venv
    rm -rf "$venv"
    pyver=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    apt_install python3-venv "python$pyver-venv"
    python3 -m venv "$venv" || { rm -rf "$venv"; die "python3 -m venv $venv did not succeed"; }
  fi
fi
py=$venv/bin/python3

if ! "$py" - "$here/tests/requirements.txt" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as md
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line: continue
    name, ver = line.split('==')
    if md.version(name) != ver: sys.exit(1)
PY
  echo "setup: installing Python packages from tests/requirements.txt into $venv"
  log=$(mktemp)
  if ! "$py" -m pip install --quiet --disable-pip-version-check -r "$here/tests/requirements.txt" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    die "pip install -r tests/requirements.txt into $venv did not succeed (output above)"
  fi
  rm -f "$log"
  "$py" -c 'import onnx, onnxruntime, numpy' || die "the packages installed but do not import in $venv"
fi
