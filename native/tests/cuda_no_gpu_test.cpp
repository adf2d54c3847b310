// A CUDA build asked to run where no GPU is visible: --backend cuda is refused with
// BACKEND_UNAVAILABLE (exit 3) and a message naming the fix; --backend auto falls back to cpu.
// Runs everywhere (no `gpu` label): it hides the GPUs itself before CUDA initialises.
#include <cstdlib>

#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  try {
    (void)make_backend("cuda");
    CHECK(false);  // must not get a backend
  } catch (const RtError& e) {
    const std::string msg = e.what();
    CHECK(e.errc() == Errc::BackendUnavailable);
    CHECK_EQ(std::string(protocol_code(e.errc())), std::string("BACKEND_UNAVAILABLE"));
    CHECK_EQ(exit_code(e.errc()), 3);
    CHECK(msg.find("--backend cpu") != std::string::npos);  // names the fix
#if defined(GRAPHRT_WITH_CUDA)
    CHECK(msg.find("CUDA_VISIBLE_DEVICES=\"\"") != std::string::npos);  // and why it saw no GPU
    CHECK(!cuda_device_visible());
#endif
  }
  const auto b = make_backend("auto");
  CHECK_EQ(b->info().backend, std::string("cpu"));
  return finish("cuda_no_gpu_test");
}
