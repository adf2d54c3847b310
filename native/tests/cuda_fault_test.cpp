// A kernel fault on the CUDA backend: the sticky error surfaces at the next synchronizing call as
// RtError(DeviceError) named after the CUDA error, the protocol answer is CUDA_ERROR with exit 6,
// and the process that hit it still tears down and exits (no hang). The fault runs in a child
// process: a sticky error ends the CUDA context for good.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "context.hpp"
#include "cuda_harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

#if defined(GRAPHRT_WITH_CUDA)
// Child: fault, report the error line on `fd`, exit with the protocol's exit code.
[[noreturn]] void fault_child(int fd) {
  if (!cuda_device_visible()) ::_exit(77);
  int code = 1;
  std::string line = "no error";
  try {
    auto b = make_cuda_backend();
    Context ctx(*b);
    auto* bad = reinterpret_cast<float*>(std::uintptr_t{0x100});  // never a device address
    launch<kernels::ChainKernel>(ctx, ctx.compute, 1u << 20, {bad, 1u << 20, 1.0f, 1.0f});
    b->synchronize();
  } catch (const RtError& e) {  // backend and context already destroyed here: teardown after a fault
    line = std::string(protocol_code(e.errc())) + " " + e.name() + " " + e.what();
    code = exit_code(e.errc());
  }
  (void)!::write(fd, line.data(), line.size());
  ::_exit(code);
}
#endif

}  // namespace

int main() {
#if !defined(GRAPHRT_WITH_CUDA)
  skip_without_gpu("cuda_fault_test");
#else
  // No CUDA call in this process before the fork: a CUDA context does not survive fork().
  int pipefd[2];
  CHECK(::pipe(pipefd) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    fault_child(pipefd[1]);
  }
  ::close(pipefd[1]);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  CHECK(done == pid);  // exited by itself within the deadline: no hang
  std::string line(4096, '\0');
  const ssize_t n = ::read(pipefd[0], line.data(), line.size());
  line.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  std::printf("child: %s\n", line.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    std::printf("cuda_fault_test: skipped (no CUDA device visible)\n");
    return 77;
  }
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 6);
  CHECK(line.rfind("CUDA_ERROR cudaErrorIllegalAddress", 0) == 0);
  CHECK(line.find("device 0") != std::string::npos);
#endif
  return finish("cuda_fault_test");
}
