#include "graphrt/backends.hpp"

#include "graphrt/error.hpp"

namespace graphrt {

std::unique_ptr<Backend> make_backend(const std::string& which) {
  if (which == "cpu") return make_cpu_backend();
#if defined(GRAPHRT_WITH_CUDA)
  if (which == "cuda") return make_cuda_backend();
  if (which == "auto") return cuda_device_visible() ? make_cuda_backend() : make_cpu_backend();
#else
  if (which == "cuda")
    throw RtError(Errc::BackendUnavailable, "BACKEND_UNAVAILABLE",
                  "backend \"cuda\" is not built into this graphrt (configure with -DGRAPHRT_CUDA=ON "
                  "where nvcc is installed); use --backend cpu or auto");
  if (which == "auto") return make_cpu_backend();
#endif
  throw RtError(Errc::BadFlag, "BAD_FLAG", "--backend: unknown backend \"" + which + "\"; known: auto, cpu, cuda");
}

}  // namespace graphrt
