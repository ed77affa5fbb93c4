#!/usr/bin/env bash
# Installs everything fdc needs on Debian 12 (as root, or through sudo) and
# creates the Python virtual environment .venv from python/requirements.txt.
# Re-runnable: packages already installed and an up-to-date .venv are skipped.
#
# Environment:
#   FDC_SETUP_NCCL=1        also install NCCL (PyPI nvidia-nccl-cu13) into .venv
#   FDC_SETUP_FORCE_APT=1   run apt-get update/install even if all packages
#                           are already installed
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

packages=(
  cmake ninja-build
  clang-22 lld-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libclang-rt-22-dev libgtest-dev clang-format-22
  rocm-device-libs libamdhip64-dev
  g++
  python3 python3-venv python3-pip
  git ca-certificates
)

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi

missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -gt 0 || "${FDC_SETUP_FORCE_APT:-0}" == 1 ]]; then
  echo "setup: installing ${missing[*]:-(forced)}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${packages[@]}"
else
  echo "setup: Debian packages already installed"
fi

# The venv uses Debian's python3 (not whatever python3 comes first on PATH),
# so it matches the python3-venv package installed above.
python=/usr/bin/python3
[[ -x "$python" ]] || python="$(command -v python3)"
requirements="$repo/python/requirements.txt"
stamp="$repo/.venv/.fdc-requirements"

if [[ -x .venv/bin/python ]] && .venv/bin/python -c 'import sys' 2>/dev/null &&
   [[ -f "$stamp" ]] && cmp -s "$requirements" "$stamp"; then
  echo "setup: .venv is up to date"
else
  echo "setup: creating .venv from python/requirements.txt"
  rm -rf .venv
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r "$requirements"
  cp "$requirements" "$stamp"
fi

# NCCL for tensor-parallel CUDA libraries (the runtime dlopens
# libnccl.so.2; Debian has no CUDA 13 build): opt in with FDC_SETUP_NCCL=1,
# then point FDC_NCCL_LIBRARY at the path printed. CI needs none (its tests
# use a fake NCCL).
if [[ "${FDC_SETUP_NCCL:-0}" == 1 ]]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    nvidia-nccl-cu13==2.28.9
  nccl="$(.venv/bin/python -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')"
  echo "setup: NCCL installed: export FDC_NCCL_LIBRARY=$nccl"
fi

# lit comes with llvm-22-tools.
if [[ ! -x /usr/lib/llvm-22/bin/lit ]]; then
  echo "setup: error: /usr/lib/llvm-22/bin/lit is missing (package llvm-22-tools)" >&2
  exit 1
fi
echo "setup: done"
