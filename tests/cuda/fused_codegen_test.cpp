// The CUDA backend's fused kernels, the compile half: every op's generated kernel compiles with NVRTC
// to PTX, for float32 and float64. NVRTC needs no GPU, so this runs wherever the plugin is built; the
// launch half runs only on a GPU (the graph suite on cuda:0).
#include <doctest/doctest.h>

#include <string>

#include "fused_codegen.h"

namespace {

// A call carrying one instruction (kind, op) over inputs x0 (and x1 for a binary one), packed as
// abi/braid_backend.h says, then a second instruction so the chain has a register to read back.
braid_kernel_call program_call(int kind, int op, braid_dtype dtype) {
  braid_kernel_call c{};
  c.struct_size = sizeof c;
  c.op = BRAID_KOP_FUSED_ELEMENTWISE;
  c.num_inputs = 2;
  c.num_outputs = 1;
  c.outputs[0].dtype = dtype;
  auto pack = [](uint64_t k, uint64_t o, uint64_t a, uint64_t b) { return k | o << 2 | a << 6 | b << 12; };
  const uint64_t first = pack(static_cast<uint64_t>(kind), static_cast<uint64_t>(op), 0, kind == 1 ? 1 : 0);
  const uint64_t second = pack(1, BRAID_BINARY_ADD, 2, 1);  // r3 = r2 + r1
  c.i[0] = 2;
  c.i[1] = static_cast<int64_t>(first | second << 21);
  return c;
}

}  // namespace

TEST_CASE("cuda fused kernels: every op's generated kernel compiles to PTX") {
  if (!braid::cuda::nvrtc_available()) {
    // The toolkit the plugin was built with is on this machine (CMake found it), so NVRTC must load.
    FAIL("NVRTC did not load");
  }
  for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_FLOAT64})
    for (int kind = 0; kind < 4; ++kind)
      for (int op = 0; op < (kind == 0 ? int{BRAID_UNARY_COUNT} : int{BRAID_BINARY_COUNT}); ++op) {
        CAPTURE(dtype);
        CAPTURE(kind);
        CAPTURE(op);
        braid::plugin::FusedProgram program;
        REQUIRE(program.decode(program_call(kind, op, dtype)));
        const std::string source = braid::cuda::fused_cuda_source(program, dtype);
        std::string error;
        const std::string ptx = braid::cuda::compile_fused_ptx(source, "compute_90", error);
        INFO(error);
        INFO(source);
        REQUIRE(!ptx.empty());
        CHECK(ptx.find(".entry braid_fused") != std::string::npos);
        // float64 arithmetic in the float64 kernel only (f64 registers), none of it in float32's.
        CHECK((ptx.find(".f64") != std::string::npos) == (dtype == BRAID_FLOAT64));
      }
}

TEST_CASE("cuda fused kernels: a malformed program is refused before any source is made") {
  braid_kernel_call c = program_call(0, BRAID_UNARY_EXP, BRAID_FLOAT32);
  braid::plugin::FusedProgram program;
  c.i[0] = 0;  // no instructions
  CHECK_FALSE(program.decode(c));
  c.i[0] = BRAID_FUSED_MAX_INSTRS + 1;
  CHECK_FALSE(program.decode(c));
  c = program_call(1, BRAID_BINARY_ADD, BRAID_FLOAT32);
  c.i[1] = static_cast<int64_t>(1 | 0 << 2 | 5 << 6 | 0 << 12);  // reads register 5 of 2
  CHECK_FALSE(program.decode(c));
  c = program_call(2, BRAID_BINARY_ADD, BRAID_FLOAT32);
  c.i[0] = 1;
  c.i[1] = static_cast<int64_t>(2 | 0 << 2 | 0 << 6 | 8 << 12);  // scalar 8 of 0..7
  CHECK_FALSE(program.decode(c));
}

TEST_CASE("cuda fused kernels: a compile error comes back with NVRTC's log") {
  REQUIRE(braid::cuda::nvrtc_available());
  std::string error;
  CHECK(braid::cuda::compile_fused_ptx("this is not CUDA", "compute_90", error).empty());
  CHECK(error.find("nvrtcCompileProgram") != std::string::npos);
  CHECK(error.size() > std::string("nvrtcCompileProgram: ").size() + 10);
}
