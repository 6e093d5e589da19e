#!/usr/bin/env bash
# Packs what a bare GPU machine needs to run braid's CUDA checks into one archive: the built binaries
# and plugins (build/bin, build/lib, kept at the absolute path they were built at, which their RUNPATHs
# name), the shared libraries this machine has and a GPU machine may lack (oneTBB, oneDNN, OpenBLAS,
# libgomp, the Vulkan loader, eu-stack's libdw), and the Fashion-MNIST files. tools/gpu/first_contact.sh unpacks it there. Run it here,
# after `scripts/build.sh`, with the CUDA plugin built:
#
#   tools/gpu/bundle.sh            # writes .gpu-bundle/bundle.tar.xz (git ignores .gpu-bundle/)
#
# git ignores .gpu-bundle/, so a copy of the working tree leaves it out: carry it explicitly (the device
# tool's `carry: [".gpu-bundle"]`; about 48 MiB, the limit is 64).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${BRAID_BUILD_DIR:-$root/build}" && pwd)
out=$root/.gpu-bundle
[[ -f $build/lib/libbraid-backend-cuda.so ]] || {
  echo "bundle.sh: $build/lib/libbraid-backend-cuda.so is missing: build with the CUDA toolkit first" >&2
  exit 1
}
rm -rf "$out" && mkdir -p "$out/stage/syslib"
# The libraries the binaries link or open that are not part of a base system image, by soname.
for lib in libtbb.so.12 libtbbmalloc.so.2 libdnnl.so.2 libopenblas.so.0 libgomp.so.1 libOpenCL.so.1 libdw.so.1 \
  libelf.so.1 libvulkan.so.1; do
  # awk reads to the end: exiting at the first match would kill ldconfig with SIGPIPE, which
  # pipefail and set -e turn into a silent exit.
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}')
  if [[ -n $path ]]; then
    cp -L "$path" "$out/stage/syslib/$lib"
  else
    echo "bundle.sh: $lib is not installed here; the GPU machine must have it" >&2
  fi
done
# eu-stack (Debian's elfutils, with libdw/libelf above) dumps a hung test's threads there.
if command -v eu-stack >/dev/null; then
  cp -L "$(command -v eu-stack)" "$out/stage/syslib/eu-stack"
else
  echo "bundle.sh: no eu-stack here (apt-get install elfutils); a hang there will be killed without its stacks" >&2
fi
data=/usr/share/datasets/fashion-mnist
files=(-C / "${build#/}/bin" "${build#/}/lib")
if [[ -d $data ]]; then files+=("${data#/}"); fi
printf '%s\n' "$build" >"$out/stage/build_dir"
# The gemm libraries' comparison of first_contact.sh's cpu stage (standalone, opens them at run time).
cc -O2 -o "$out/gemm_libraries" "$root/tools/gemm_libraries.c" -ldl -lpthread ||
  echo "bundle.sh: tools/gemm_libraries.c did not build; the cpu stage will skip the gemm libraries" >&2
tar --exclude='*.a' -cf - "${files[@]}" -C "$out/stage" syslib build_dir | xz -T0 -6 >"$out/bundle.tar.xz"
rm -rf "$out/stage"
echo "bundle.sh: $(du -h "$out/bundle.tar.xz" | cut -f1) in $out/bundle.tar.xz (built at $build)"
