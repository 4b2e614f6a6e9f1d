#!/usr/bin/env bash
# Makes an aarch64 sysroot with the arm64 builds of posenc's test
# dependencies, extracted from Debian's packages (libdnnl-dev:arm64 cannot be
# installed beside the amd64 one, so the packages are unpacked, not
# installed). Usage: make-arm64-sysroot.sh DIR. Does nothing if DIR is done.
set -euo pipefail

sysroot=${1:?usage: make-arm64-sysroot.sh DIR}
if [[ -f "$sysroot/.complete" ]]; then exit 0; fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
fi

packages=(libdnnl-dev:arm64 libdnnl2:arm64 libgomp1:arm64 ocl-icd-libopencl1:arm64
          libgtest-dev:arm64 libxsimd-dev:arm64)
downloads=$(mktemp -d)
chmod 755 "$downloads"  # apt downloads as its _apt user
trap 'rm -rf "$downloads"' EXIT
if ! (cd "$downloads" && apt-get download "${packages[@]}" >/dev/null); then
  $sudo apt-get update -qq
  (cd "$downloads" && apt-get download "${packages[@]}" >/dev/null)
fi
mkdir -p "$sysroot"
for deb in "$downloads"/*.deb; do dpkg -x "$deb" "$sysroot"; done
touch "$sysroot/.complete"
