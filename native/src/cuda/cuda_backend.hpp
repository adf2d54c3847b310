// The CUDA backend (backend.hpp has the semantics it keeps). Host-only code: device code lives in
// cuda_kernels.cu. Handles are the CUDA runtime's own (cudaStream_t, cudaEvent_t, cudaGraph_t,
// cudaGraphExec_t) reinterpreted as the opaque *Raw types.
//
// - Streams are blocking (cudaStreamDefault): a synchronous copy, memset or sync call during a
//   capture then fails with a capture error instead of silently running outside the graph (on a
//   non-blocking stream it escapes the capture unnoticed).
// - Capture is cudaStreamCaptureModeGlobal: cudaMalloc from any thread during a capture fails.
// - A capture error while a capture is live poisons that capture: end_capture then destroys what
//   was captured and throws CaptureFailed, whatever cudaStreamEndCapture said.
// - Every launch is cudaLaunchKernelExC with the programmatic-stream-serialization attribute set
//   to the PDL toggle: eager and captured launches are the same call.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda_kernels.hpp"
#include "graphrt/backend.hpp"
#include "nvml_clocks.hpp"

namespace graphrt::cuda {

class CudaBackend final : public Backend {
 public:
  // Uses device 0 of the visible ones (the worker sets CUDA_VISIBLE_DEVICES to the leased card).
  CudaBackend();
  ~CudaBackend() override;

  DeviceInfo info() const override;
  void* alloc(std::size_t bytes) override;
  void free(void* ptr) noexcept override;
  void memcpy_h2d(void* dst, const void* src, std::size_t bytes) override;
  void memcpy_d2h(void* dst, const void* src, std::size_t bytes) override;
  void memcpy_d2d(void* dst, const void* src, std::size_t bytes) override;
  void memset(void* dst, int value, std::size_t bytes) override;
  StreamRaw compute_stream() override;
  StreamRaw stream_create() override;
  void stream_destroy(StreamRaw stream) noexcept override;
  void stream_synchronize(StreamRaw stream) override;
  EventRaw event_create() override;
  void event_destroy(EventRaw event) noexcept override;
  void event_record(EventRaw event, StreamRaw stream) override;
  void stream_wait_event(StreamRaw stream, EventRaw event) override;
  float event_elapsed_ms(EventRaw start, EventRaw end) override;
  void launch(StreamRaw stream, KernelId id, Dim3 grid, Dim3 block, const void* args,
              std::size_t args_size, LaunchOpts opts) override;
  void begin_capture(StreamRaw stream) override;
  GraphRaw end_capture(StreamRaw stream) override;
  bool is_capturing(StreamRaw stream) const override;
  std::size_t graph_node_count(GraphRaw graph) override;
  GraphExecRaw instantiate(GraphRaw graph) override;
  void graph_launch(GraphExecRaw exec, StreamRaw stream) override;
  void graph_destroy(GraphRaw graph) noexcept override;
  void exec_destroy(GraphExecRaw exec) noexcept override;
  void synchronize() override;
  std::optional<ClockReading> read_clocks() override;
  std::optional<std::uint64_t> read_ecc_errors() override;

  // Which wrapper later launches use (cuda_kernels.cu); a graph keeps the ones it captured.
  // Not a protocol toggle: the benchmark measures the three placements (AfterWait, the default,
  // was the fastest on the H200 in native/BENCHMARKS.md).
  void set_pdl_trigger(PdlTrigger t) { trigger_ = t; }

 private:
  // Runs a CUDA call; on a capture error while a capture is live, marks it invalid first.
  void check(cudaError_t err, const char* expr, const char* file, int line);

  int device_ = 0;
  DeviceInfo info_;
  cudaStream_t compute_ = nullptr;
  std::vector<cudaStream_t> streams_;  // created by stream_create, destroyed with the backend
  cudaStream_t capturing_ = nullptr;   // origin stream of the live capture, if any
  bool capture_poisoned_ = false;
  std::string poison_reason_;
  std::unique_ptr<NvmlClocks> nvml_;
  PdlTrigger trigger_ = PdlTrigger::AfterWait;
};

}  // namespace graphrt::cuda
