// The CPU backend: an honest emulation of a device (see backend.hpp for the semantics it keeps).
#pragma once

#include <memory>
#include <set>
#include <vector>

#include "cpu_device.hpp"
#include "graphrt/backend.hpp"

namespace graphrt::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

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

  // A host function as a stream item (what cudaLaunchHostFunc is to CUDA): `fn(grid {1}, block
  // {1}, args)` runs on the stream's device thread in stream order; under capture it is a graph
  // node like a kernel (the CPU collective's all-reduce). `args_size` <= kMaxArgsBytes bytes are
  // copied now (frozen, as kernel arguments are).
  void launch_host(StreamRaw stream, GridFn fn, const void* args, std::size_t args_size);

 private:
  void enqueue(CpuStream* s, const KernelCall& call);
  CpuStream* stream(StreamRaw raw) const;
  // Throws CaptureFailed (and invalidates every live capture) when any capture is live: the
  // behaviour of a blocking stream / Global capture mode for `what`.
  void refuse_during_capture(const char* what);
  void wait_all_idle();

  Device device_;
  std::vector<std::unique_ptr<CpuStream>> streams_;  // [0] is the compute stream
  std::vector<std::shared_ptr<Capture>> captures_;   // live captures
  std::set<void*> allocations_;
};

}  // namespace graphrt::cpu
