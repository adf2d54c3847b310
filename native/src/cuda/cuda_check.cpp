#include "cuda_check.hpp"

namespace graphrt::cuda {

bool is_capture_error(cudaError_t err) noexcept {
  switch (err) {
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureWrongThread:
    case cudaErrorCapturedEvent:
      return true;
    default:
      return false;
  }
}

bool is_sticky(cudaError_t err) noexcept {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

Errc errc_of(cudaError_t err) noexcept {
  if (is_capture_error(err)) return Errc::CaptureFailed;
  if (is_sticky(err)) return Errc::DeviceError;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInitializationError)
    return Errc::BackendUnavailable;
  return Errc::InvalidValue;
}

void raise_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  int device = -1;
  // cudaGetDevice does not touch the error state; a sticky error does not stop it answering.
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  // Clear what CUDA lets us clear, so the next call does not report this error again.
  if (!is_sticky(err)) (void)cudaGetLastError();
  rt_raise(errc_of(err), cudaGetErrorName(err), expr, file, line,
           std::string("CUDA call failed on device ") + std::to_string(device) + ": " + cudaGetErrorString(err));
}

}  // namespace graphrt::cuda
