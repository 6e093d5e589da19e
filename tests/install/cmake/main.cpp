// Consumer of an installed braid through find_package(braid) and abi/braid.hpp (see ../README.md).
//   consumer LIBDIR BACKEND...
// Lists the backends and devices; fails unless every BACKEND was found in LIBDIR (the installed
// plugins, next to the installed libbraid); then computes on cpu:0 and checks the result.
#include <braid.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: consumer LIBDIR BACKEND...\n");
    return 2;
  }
  const std::string libdir = std::string(argv[1]) + "/";
  int failures = 0;

  const std::string version = braid_version_string();
  std::printf("braid %s (package %s)\n", version.c_str(), BRAID_PACKAGE_VERSION);
  if (version.substr(0, version.find(' ')) != BRAID_PACKAGE_VERSION) {
    std::printf("FAIL: braidConfigVersion.cmake says %s, libbraid says %s\n", BRAID_PACKAGE_VERSION, version.c_str());
    ++failures;
  }

  braid::Context ctx;
  std::vector<braid_backend_info> backends;
  for (int32_t i = 0; i < ctx.backend_count(); ++i) {
    const braid_backend_info b = ctx.backend_info(i);
    std::printf("backend %s: %s, loaded %d, %d device(s)%s%s\n", b.name, b.path, b.loaded, b.device_count,
                *b.reason ? ", " : "", b.reason);
    backends.push_back(b);
  }
  for (int a = 2; a < argc; ++a) {
    bool found = false;
    for (const auto& b : backends)
      found = found || (std::string_view(b.name) == argv[a] && std::string_view(b.path).starts_with(libdir));
    if (!found) {
      std::printf("FAIL: backend %s was built but not found in %s\n", argv[a], libdir.c_str());
      ++failures;
    }
  }
  for (const braid::Device d : ctx.devices()) {
    const braid_device_info info = ctx.device_info(d);
    std::printf("device %s: %s\n", info.id, info.name);
  }

  // (x + 1) x^T with x = ones(2, 3): every element is 3 * 2 = 6.
  const braid::Device cpu0 = ctx.find_device("cpu:0");
  const braid::Tensor x = braid::Tensor::ones(ctx, cpu0, BRAID_FLOAT32, {2, 3});
  const std::vector<float> y = braid::matmul(x + 1.0, x, false, true).to_vector<float>();
  bool ok = y.size() == 4;
  for (float v : y) ok = ok && v == 6.0f;
  std::printf("matmul on cpu:0: %s\n", ok ? "ok" : "FAIL: wrong result");
  if (!ok) ++failures;
  return failures == 0 ? 0 : 1;
} catch (const braid::Error& e) {
  std::printf("FAIL: %s\n", e.what());
  return 1;
}
