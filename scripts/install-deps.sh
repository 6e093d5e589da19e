#!/usr/bin/env bash
# Installs everything braid needs to build and test, from Debian 12 (bookworm) packages.
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --bench    also python3-torch, the benchmarks' comparison anchor,
#                                      python3-matplotlib for tools/hw_plots.py, and Open MPI for
#                                      the allreduce --ranks anchor (never dependencies of braid itself)
#
# Idempotent and fast when there is nothing to do: packages already installed (per dpkg-query) are
# skipped, and apt-get update only runs when something is missing. Runs as root, or through sudo.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config  # toolchain (CMake >= 3.25, Ninja)
  libopenblas-dev libtbb-dev                           # CPU backend: gemm and the per-device thread pools
  libdnnl-dev                                          # CPU backend: float32 gemms and convolutions (oneDNN)
  doctest-dev                                          # unit and conformance tests
  clang                                                # libFuzzer (tests/fuzz: the fuzzers CI runs)
  clang-format                                         # the format check (tools/check_format.sh)
  zlib1g-dev                                           # compressed data files (safetensors, IDX .gz)
  libdlpack-dev                                        # DLPack's header: braid_tensor_from_dlpack (zero-copy import)
  nlohmann-json3-dev                                   # braid-bench reads the samples' JSON results
  dataset-fashion-mnist                                # the data tests and samples (IDX .gz files)
  python3 python3-numpy python3-dev                    # Python bindings (python3-dev: their compiled path) and tests
  python3-venv python3-setuptools python3-wheel        # pip install ./bindings/python into a venv (its test)
  libvulkan-dev glslc                                  # Vulkan backend: headers + loader, GLSL -> SPIR-V
  libshaderc-dev glslang-dev spirv-tools               # Vulkan backend: shaderc, glslang, SPIRV-Tools (static:
                                                       # fused kernels compiled at run time)
  mesa-vulkan-drivers vulkan-validationlayers          # lavapipe (CPU Vulkan device) for CI, validation layer
  elfutils                                             # eu-stack: tools/gpu dumps a hung test's threads
  libgloo-dev                                          # the Gloo communication plugin (collectives across processes)
  iproute2                                             # the two-host test's network namespaces (ip netns)
  openssh-server openssh-client                        # the two-host test's braid-run --hosts over a real ssh
)
# No CUDA here: the toolkit is preinstalled at /usr/local/cuda where the CUDA plugin is built (CI, dev
# machines); without it CMake turns the plugin off and builds the rest (docs/CUDA.md).
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(python3-torch python3-matplotlib libopenmpi-dev openmpi-bin) ;;
    -h | --help)
      sed -n '2,10s/^# \{0,1\}//p' "$0"
      exit 0
      ;;
    *)
      echo "install-deps.sh: unknown argument '$arg'" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi

as_root=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null; then
    echo "install-deps.sh: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  as_root=(sudo)
fi
echo "install-deps.sh: installing ${missing[*]}"
# env, not export: sudo resets the environment, and apt must never stop to ask a question.
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
