// float32 gemm through oneDNN's dnnl_sgemm (JIT kernels for the CPU's ISA), when the plugin was built
// with oneDNN (BRAID_HAVE_ONEDNN) and BRAID_CPU_GEMM does not ask for OpenBLAS. Why, and the figures:
// backends/cpu/README.md, "Matrix products".
#pragma once
#include <cstdint>

namespace braid::cpu::kern::onednn {

// Row-major C = op(A) op(B) + beta C on the calling thread alone (oneDNN as an OpenMP team of one, as
// for its convolutions). Returns false when it did not run (no oneDNN, BRAID_CPU_GEMM=openblas, or an
// error): the caller then runs OpenBLAS.
#ifdef BRAID_HAVE_ONEDNN
// Makes oneDNN on the calling thread an OpenMP team of one (once per thread), so that it never starts
// a thread pool beside the device's arena; every oneDNN call (gemms, convolutions) runs after it.
void single_threaded();

// One call into oneDNN (a gemm, or a convolution over the arena), admitted unless the process is
// exiting. At exit() the destructors registered with atexit run newest first, and oneDNN registers
// some of its own during its first calls, after braid's exit handler (which finishes the work still
// queued): they would run first, under a worker still inside oneDNN (matmuls queued on two CPU devices
// at exit crashed in about one run of three). So after its first successful call of each kind, a call
// registers a guard, which then runs before them: it waits for the calls in flight, and every later
// call is refused (admitted() false: OpenBLAS or the builtin kernels run it).
class Call {
 public:
  enum Kind { gemm, conv };
  Call();
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  bool admitted() const { return admitted_; }
  void succeeded(Kind kind);  // registers the exit guard after the first success of this kind

 private:
  bool admitted_;
};

bool sgemm_in_use();  // whether float32 gemms run here: BRAID_CPU_GEMM, read once
// oneDNN's one-time set-up (its sgemm's JIT kernels, and the state they are made with), done at the
// plugin's first enumeration, on a thread of its own (the set-up is process-wide; a team of one stays
// with that thread). Made lazily by the first gemm instead, the set-up's static objects would be
// newer than the host's exit handler, and exit() would destroy them before that handler lets the
// queued work finish: a first gemm run by that work crashed inside oneDNN.
void prepare();
bool sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float beta, float* c, int64_t ldc);
// Row-major C (float32) = op(A) op(B) with A and B bfloat16 (their bits as uint16_t), float32
// accumulation, on the calling thread alone: oneDNN's matmul primitive, made once per shape. false
// when it did not run (no oneDNN, BRAID_CPU_GEMM=openblas, a shape oneDNN refuses): the caller then
// widens the operands to float32.
bool gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, const uint16_t* b,
               int64_t ldb, float* c, int64_t ldc);
#else
inline void prepare() {}
inline bool sgemm_in_use() { return false; }
inline bool sgemm(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float, float*,
                  int64_t) {
  return false;
}
inline bool gemm_bf16(bool, bool, int64_t, int64_t, int64_t, const uint16_t*, int64_t, const uint16_t*, int64_t, float*,
                      int64_t) {
  return false;
}
#endif

}  // namespace braid::cpu::kern::onednn
