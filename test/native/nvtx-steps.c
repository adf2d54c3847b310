/* A program without CUDA that marks steps with NVTX, for test/command/nvtx-step-range.test.ts:
 * NVTX (header-only v3) loads NVTX_INJECTION64_PATH at the first call. argv[1] steps of
 * "decode_step" are pushed and popped; inside each, the same name nested and another range
 * ("attention"), with a 2 ms sleep at every level, so a step that ends at the wrong pop is shorter
 * than 10 ms; before the steps a 30 ms range "setup"; then one step as start/end and a pop too many. */
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms) {
  struct timespec t = {0, ms * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 0;
  nvtxRangePushA("setup");
  sleep_ms(30);
  nvtxRangePop();
  for (int i = 0; i < steps; ++i) {
    nvtxRangePushA("decode_step");
    sleep_ms(2);
    nvtxRangePushA("attention");
    sleep_ms(2);
    nvtxRangePushA("decode_step");
    sleep_ms(2);
    nvtxRangePop();
    sleep_ms(2);
    nvtxRangePop();
    sleep_ms(2);
    nvtxRangePop();
  }
  nvtxRangeId_t id = nvtxRangeStartA("decode_step");
  sleep_ms(10);
  nvtxRangeEnd(id);
  nvtxRangePop();
  return 0;
}
