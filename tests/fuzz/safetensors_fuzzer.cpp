// libFuzzer over the safetensors reader, as an application reaches it: the input becomes a file, whose
// names are listed (braid_safetensors_names) and whose every tensor is loaded (braid_load_safetensors).
// A damaged file must give an error with a message, never a crash, a hang, or memory that grows with
// what a damaged header claims (-rss_limit_mb): a tensor's range must lie inside the file.
#include <braid.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
braid_context g_ctx = nullptr;
std::string g_path;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/braid-fuzz-safetensors-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  g_path = std::string(tmpl) + "/f.safetensors";
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  if (braid_context_create(&o, &g_ctx) != BRAID_OK) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(g_path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  size_t need = 0;
  if (braid_safetensors_names(g_path.c_str(), nullptr, 0, &need) != BRAID_OK) {
    if (braid_last_error()[0] == '\0') std::abort();  // an error always says why
    return 0;
  }
  std::string names(need, '\0');
  if (braid_safetensors_names(g_path.c_str(), names.data(), names.size(), &need) != BRAID_OK) std::abort();
  std::vector<const char*> list;
  for (size_t at = 0; at < names.size(); at = names.find('\0', at) + 1) list.push_back(names.c_str() + at);
  std::vector<braid_tensor> outs(list.size(), nullptr);
  // The names were listed from a file the reader accepted: loading them all must work.
  if (braid_load_safetensors(g_ctx, 0, g_path.c_str(), int32_t(list.size()), list.data(), outs.data()) != BRAID_OK)
    std::abort();
  for (braid_tensor t : outs)
    if (braid_tensor_release(t) != BRAID_OK) std::abort();
  return 0;
}
