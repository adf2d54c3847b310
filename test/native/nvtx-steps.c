/* A program without CUDA that marks steps with NVTX, for test/command/nvtx-step-range.test.ts:
 * NVTX (header-only v3) loads NVTX_INJECTION64_PATH at the first call. argv[1] steps of
 * "decode_step" are pushed and popped; inside each, the same name nested and another range
 * ("attention"), with a 2 ms sleep at every level, so a step that ends at the wrong pop is shorter
 * than 10 ms; before the steps a 30 ms range "setup"; then two steps in a domain of their own, as
 * nvtx3::scoped_range makes them (nvtxDomainRangePushEx, one with a registered string), whose pops
 * interleave with a default-domain range (each domain has its own stack: a shared one would see
 * one step); then one step as start/end and a pop too many. Steps: argv[1] + 3. */
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
  nvtxDomainHandle_t domain = nvtxDomainCreateA("orch-test");
  nvtxEventAttributes_t ascii = {0};
  ascii.version = NVTX_VERSION;
  ascii.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  ascii.messageType = NVTX_MESSAGE_TYPE_ASCII;
  ascii.message.ascii = "decode_step";
  nvtxEventAttributes_t registered = ascii;
  registered.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  registered.message.registered = nvtxDomainRegisterStringA(domain, "decode_step");
  nvtxDomainRangePushEx(domain, &ascii);
  sleep_ms(5);
  nvtxRangePushA("attention");
  sleep_ms(5);
  nvtxDomainRangePop(domain);
  nvtxDomainRangePushEx(domain, &registered);
  sleep_ms(10);
  nvtxDomainRangePop(domain);
  nvtxRangePop();
  nvtxRangeId_t id = nvtxRangeStartA("decode_step");
  sleep_ms(10);
  nvtxRangeEnd(id);
  nvtxRangePop();
  return 0;
}
