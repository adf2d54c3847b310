/* A program without CUDA that marks steps with NVTX, for test/native/nvtx-step-range.test.ts:
 * NVTX (header-only v3) loads NVTX_INJECTION64_PATH at the first call. argv[1] steps of
 * "decode_step" are pushed and popped; inside each, the same name nested and another range
 * ("attention"); between steps a range "setup"; then one step as start/end and one pop too many. */
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 0;
  nvtxRangePushA("setup");
  nvtxRangePop();
  for (int i = 0; i < steps; ++i) {
    nvtxRangePushA("decode_step");
    nvtxRangePushA("attention");
    nvtxRangePushA("decode_step");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxRangeId_t id = nvtxRangeStartA("decode_step");
  nvtxRangeEnd(id);
  nvtxRangePop();
  return 0;
}
