#include "cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "graphrt/backends.hpp"
#include "../launch_checks.hpp"

// A checked call that also poisons a live capture when CUDA reports a capture error.
#define RT_CUDA_CALL(expr) check((expr), #expr, __FILE__, __LINE__)

namespace graphrt::cuda {
namespace {

cudaStream_t stream_of(StreamRaw s) { return reinterpret_cast<cudaStream_t>(s); }
cudaEvent_t event_of(EventRaw e) { return reinterpret_cast<cudaEvent_t>(e); }
cudaGraph_t graph_of(GraphRaw g) { return reinterpret_cast<cudaGraph_t>(g); }
cudaGraphExec_t exec_of(GraphExecRaw e) { return reinterpret_cast<cudaGraphExec_t>(e); }

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

CudaBackend::CudaBackend() {
  RT_CUDA_CHECK(cudaSetDevice(device_));
  RT_CUDA_CHECK(cudaFree(nullptr));  // create the context now, not inside the first timed step
  cudaDeviceProp p{};
  RT_CUDA_CHECK(cudaGetDeviceProperties(&p, device_));
  char bus[32] = {};
  RT_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device_));
  nvml_ = std::make_unique<NvmlClocks>(bus);
  int driver = 0;
  int runtime = 0;
  RT_CUDA_CHECK(cudaDriverGetVersion(&driver));
  RT_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const std::string nvml_driver = nvml_->driver_version();
  info_.backend = "cuda";
  info_.device = std::string(p.name) + " (" + bus + ")";
  info_.sm = std::to_string(p.major) + "." + std::to_string(p.minor);
  info_.sms = p.multiProcessorCount;
  info_.driver = (nvml_driver.empty() ? std::string() : nvml_driver + ", ") + "CUDA driver " +
                 version_text(driver) + ", runtime " + version_text(runtime);
  info_.features = Features{.graph = true, .pdl = p.major >= 9, .overlap = true, .collectives = false};
  RT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamDefault));
}

CudaBackend::~CudaBackend() {
  RT_CUDA_CHECK_NOEXCEPT(cudaDeviceSynchronize());
  for (cudaStream_t s : streams_) RT_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s));
  RT_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(compute_));
}

void CudaBackend::check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  if (capturing_ != nullptr && is_capture_error(err) && !capture_poisoned_) {
    capture_poisoned_ = true;
    poison_reason_ = std::string(expr) + " failed during capture: " + cudaGetErrorName(err);
  }
  raise_cuda(err, expr, file, line);
}

DeviceInfo CudaBackend::info() const { return info_; }

void* CudaBackend::alloc(std::size_t bytes) {
  void* p = nullptr;
  RT_CUDA_CALL(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
  return p;
}

void CudaBackend::free(void* ptr) noexcept {
  if (ptr != nullptr) RT_CUDA_CHECK_NOEXCEPT(cudaFree(ptr));
}

// cudaMemcpy/cudaMemset run on the legacy default stream, which waits for all work on blocking
// streams: "wait for all device work first" as the interface asks, and a capture error when a
// blocking stream is capturing.
void CudaBackend::memcpy_h2d(void* dst, const void* src, std::size_t bytes) {
  RT_CUDA_CALL(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void CudaBackend::memcpy_d2h(void* dst, const void* src, std::size_t bytes) {
  RT_CUDA_CALL(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void CudaBackend::memcpy_d2d(void* dst, const void* src, std::size_t bytes) {
  RT_CUDA_CALL(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  RT_CUDA_CALL(cudaDeviceSynchronize());  // D2D cudaMemcpy is asynchronous to the host
}
void CudaBackend::memset(void* dst, int value, std::size_t bytes) {
  RT_CUDA_CALL(cudaMemset(dst, value, bytes));
  RT_CUDA_CALL(cudaDeviceSynchronize());  // cudaMemset of device memory is asynchronous to the host
}

StreamRaw CudaBackend::compute_stream() { return reinterpret_cast<StreamRaw>(compute_); }

StreamRaw CudaBackend::stream_create() {
  cudaStream_t s = nullptr;
  RT_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
  streams_.push_back(s);
  return reinterpret_cast<StreamRaw>(s);
}

void CudaBackend::stream_destroy(StreamRaw raw) noexcept {
  cudaStream_t s = stream_of(raw);
  if (s == compute_) return;  // the compute stream belongs to the backend
  auto it = std::find(streams_.begin(), streams_.end(), s);
  if (it == streams_.end()) return;
  streams_.erase(it);
  RT_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s));
}

void CudaBackend::stream_synchronize(StreamRaw s) { RT_CUDA_CALL(cudaStreamSynchronize(stream_of(s))); }

EventRaw CudaBackend::event_create() {
  cudaEvent_t e = nullptr;
  RT_CUDA_CALL(cudaEventCreate(&e));
  return reinterpret_cast<EventRaw>(e);
}

void CudaBackend::event_destroy(EventRaw e) noexcept { RT_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(event_of(e))); }

void CudaBackend::event_record(EventRaw e, StreamRaw s) { RT_CUDA_CALL(cudaEventRecord(event_of(e), stream_of(s))); }

void CudaBackend::stream_wait_event(StreamRaw s, EventRaw e) {
  RT_CUDA_CALL(cudaStreamWaitEvent(stream_of(s), event_of(e), 0));
}

float CudaBackend::event_elapsed_ms(EventRaw start, EventRaw end) {
  RT_CUDA_CALL(cudaEventSynchronize(event_of(end)));
  float ms = 0;
  RT_CUDA_CALL(cudaEventElapsedTime(&ms, event_of(start), event_of(end)));
  return ms;
}

void CudaBackend::launch(StreamRaw s, KernelId id, Dim3 grid, Dim3 block, const void* args,
                         std::size_t args_size, LaunchOpts opts) {
  checked_kernel(id, grid, block, args_size, "cudaError");
  // The PDL toggle is the attribute's value: off and on are the same call, the same kernel.
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = opts.pdl ? 1 : 0;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid.x, grid.y, grid.z);
  cfg.blockDim = dim3(block.x, block.y, block.z);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream_of(s);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  void* params[] = {const_cast<void*>(args)};  // the kernel's one parameter: the Args struct, copied now
  RT_CUDA_CALL(cudaLaunchKernelExC(&cfg, kernel_function(id, trigger_), params));
}

void CudaBackend::begin_capture(StreamRaw s) {
  RT_CHECK(capturing_ == nullptr, Errc::CaptureFailed, "cudaErrorStreamCaptureUnsupported",
           "begin_capture while another capture is live");
  RT_CUDA_CALL(cudaStreamBeginCapture(stream_of(s), cudaStreamCaptureModeGlobal));
  capturing_ = stream_of(s);
  capture_poisoned_ = false;
  poison_reason_.clear();
}

GraphRaw CudaBackend::end_capture(StreamRaw s) {
  RT_CHECK(capturing_ != nullptr && capturing_ == stream_of(s), Errc::InvalidValue, "cudaErrorIllegalState",
           "end_capture on a stream that did not begin a capture");
  cudaGraph_t g = nullptr;
  const cudaError_t err = cudaStreamEndCapture(stream_of(s), &g);
  capturing_ = nullptr;
  const bool poisoned = std::exchange(capture_poisoned_, false);
  if (err == cudaSuccess && !poisoned) return reinterpret_cast<GraphRaw>(g);
  // Failure: destroy the partial graph and clear what CUDA lets us clear.
  if (g != nullptr) RT_CUDA_CHECK_NOEXCEPT(cudaGraphDestroy(g));
  if (err != cudaSuccess && is_sticky(err)) raise_cuda(err, "cudaStreamEndCapture", __FILE__, __LINE__);
  (void)cudaGetLastError();
  const std::string why = poisoned ? poison_reason_ : std::string("cudaStreamEndCapture: ") + cudaGetErrorName(err);
  RT_THROW(Errc::CaptureFailed, err != cudaSuccess ? cudaGetErrorName(err) : "cudaErrorStreamCaptureInvalidated",
           "capture failed, graph discarded: " + why);
}

bool CudaBackend::is_capturing(StreamRaw s) const {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  RT_CUDA_CHECK(cudaStreamIsCapturing(stream_of(s), &st));
  return st != cudaStreamCaptureStatusNone;
}

std::size_t CudaBackend::graph_node_count(GraphRaw graph) {
  std::size_t n = 0;
  RT_CUDA_CALL(cudaGraphGetNodes(graph_of(graph), nullptr, &n));
  return n;
}

GraphExecRaw CudaBackend::instantiate(GraphRaw graph) {
  cudaGraphExec_t exec = nullptr;
  RT_CUDA_CALL(cudaGraphInstantiate(&exec, graph_of(graph), 0));
  // Upload now so the first replay does not pay for it (counted in instantiate_ms). The exec is
  // not owned by anyone until it is returned: destroy it here if the upload fails.
  try {
    RT_CUDA_CALL(cudaGraphUpload(exec, compute_));
    RT_CUDA_CALL(cudaStreamSynchronize(compute_));
  } catch (...) {
    RT_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(exec));
    throw;
  }
  return reinterpret_cast<GraphExecRaw>(exec);
}

void CudaBackend::graph_launch(GraphExecRaw exec, StreamRaw s) { RT_CUDA_CALL(cudaGraphLaunch(exec_of(exec), stream_of(s))); }

void CudaBackend::graph_destroy(GraphRaw graph) noexcept { RT_CUDA_CHECK_NOEXCEPT(cudaGraphDestroy(graph_of(graph))); }

void CudaBackend::exec_destroy(GraphExecRaw exec) noexcept {
  RT_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(exec_of(exec)));
}

void CudaBackend::synchronize() {
  RT_CUDA_CALL(cudaDeviceSynchronize());
  RT_CUDA_CALL(cudaGetLastError());
}

std::optional<ClockReading> CudaBackend::read_clocks() { return nvml_->read(); }
std::optional<std::uint64_t> CudaBackend::read_ecc_errors() { return nvml_->ecc_errors(); }

}  // namespace graphrt::cuda

namespace graphrt {

bool cuda_device_visible() noexcept {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) (void)cudaGetLastError();
  return err == cudaSuccess && n > 0;
}

std::unique_ptr<Backend> make_cuda_backend() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    throw RtError(Errc::BackendUnavailable, err != cudaSuccess ? cudaGetErrorName(err) : "cudaErrorNoDevice",
                  std::string("backend \"cuda\": no CUDA device is visible to this process (cudaGetDeviceCount: ") +
                      (err != cudaSuccess ? std::string(cudaGetErrorName(err)) + ", " + cudaGetErrorString(err)
                                          : std::string("0 devices")) +
                      "; CUDA_VISIBLE_DEVICES=" + (visible != nullptr ? "\"" + std::string(visible) + "\"" : "unset") +
                      "). Fix: run where nvidia-smi lists a GPU and CUDA_VISIBLE_DEVICES (if set) names it, or "
                      "pass --backend cpu (--backend auto picks cpu when no GPU is visible)");
  }
  return std::make_unique<cuda::CudaBackend>();
}

}  // namespace graphrt
