// RT_CUDA_CHECK: the one check macro of the CUDA backend. A failed call becomes an RtError whose
// name is the CUDA error name and whose message carries the expression, file:line, the device and
// the error string; the Errc says what graphrt does with it (see errc_of).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "graphrt/error.hpp"

namespace graphrt::cuda {

// What a CUDA error means to graphrt:
//   capture errors (illegal call during capture, invalidated/unjoined capture) -> CaptureFailed
//   sticky errors (a kernel fault; the context is unusable from now on)       -> DeviceError
//   no driver / no device                                                      -> BackendUnavailable
//   anything else                                                              -> InvalidValue (API misuse)
Errc errc_of(cudaError_t err) noexcept;
bool is_capture_error(cudaError_t err) noexcept;
bool is_sticky(cudaError_t err) noexcept;

// Throws RtError(errc_of(err)). The message names the device ordinal the calling thread is on.
[[noreturn]] void raise_cuda(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace graphrt::cuda

#define RT_CUDA_CHECK(expr)                                                          \
  do {                                                                               \
    const cudaError_t rt_cuda_err_ = (expr);                                         \
    if (rt_cuda_err_ != cudaSuccess)                                                 \
      ::graphrt::cuda::raise_cuda(rt_cuda_err_, #expr, __FILE__, __LINE__);          \
  } while (0)

// For destructors and *_destroy: never throws. A failure is cleared unless it is sticky (then the
// next checked call reports it).
#define RT_CUDA_CHECK_NOEXCEPT(expr)                                                 \
  do {                                                                               \
    const cudaError_t rt_cuda_err_ = (expr);                                         \
    if (rt_cuda_err_ != cudaSuccess && !::graphrt::cuda::is_sticky(rt_cuda_err_))    \
      (void)cudaGetLastError();                                                      \
  } while (0)
