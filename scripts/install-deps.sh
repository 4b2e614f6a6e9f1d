#!/usr/bin/env bash
# Installs the Debian packages posenc builds with; does nothing for packages
# already present. --test adds what the full test suite needs: the aarch64
# cross toolchain and qemu for the NEON run (the arm64 sysroot is made by
# scripts/make-arm64-sysroot.sh), clang with libFuzzer for the fuzzer, and
# LLVM's OpenMP runtime with its Archer tool for ThreadSanitizer.
# Debian's oneDNN is built with its OpenCL GPU runtime, so its CMake package
# (and posenc's installed one for posenc::posenc_static) needs the OpenCL
# headers and libOpenCL.so: ocl-icd-opencl-dev, which libdnnl-dev itself does
# not pull in.
# --test also installs what the Python package's tests need: Debian's
# python3-torch (1.13), torchvision (timm imports it), numpy and pytest, and
# from PyPI, without their dependencies, timm and segment-anything (pure
# Python; the timm version pinned is one that runs on torch 1.13).
set -euo pipefail

packages=(build-essential cmake pkg-config libdnnl-dev ocl-icd-opencl-dev libxsimd-dev
          libgtest-dev libbenchmark-dev libpng-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(crossbuild-essential-arm64 qemu-user-static clang libclang-rt-14-dev libomp-14-dev
             python3-torch python3-torchvision python3-numpy python3-pytest python3-pip
             python3-venv)
fi
python_models=(timm==1.0.31 segment-anything==1.0)

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ "${1:-}" == "--test" ]]; then
  $sudo /usr/bin/python3 -m pip install -q --root-user-action=ignore --break-system-packages --no-deps "${python_models[@]}"
fi
