// The backend interface: what graphrt needs from a device. Host-only; one implementation per
// device kind (src/cpu/ emulates a device with threads, src/cuda/ drives an NVIDIA GPU). Nothing
// above this interface knows which one it runs on, so eager mode, capture, replay, the gates and
// the protocol are the same code on both.
//
// Handles are opaque pointers owned by the backend. StreamObj & co. are never defined: each
// backend reinterpret_casts its own type (CUDA: cudaStream_t, cudaEvent_t, cudaGraph_t,
// cudaGraphExec_t; CPU: its classes in src/cpu/), so both backends link into one binary. Owning them is the job of the
// move-only RAII wrappers in handles.hpp; only those call the *_destroy functions.
//
// Semantics every backend keeps (the CPU backend emulates what CUDA 13 does on the H200, checked
// there by native/tests/cuda_backend_test.cpp):
// - Errors are RtError (error.hpp). Errc::CaptureFailed for anything illegal during a capture:
//   alloc (as cudaMalloc in Global capture mode), the synchronous copies and memset (as on a
//   blocking stream), synchronize; such an error also invalidates the capture, so end_capture
//   then throws CaptureFailed too. Errc::DeviceError for a sticky device fault.
// - Streams are created blocking; compute_stream() is the backend-owned default stream every
//   step starts and ends on, the one capture begins on.
// - A stream that waits on an event recorded in a capturing stream joins that capture (its
//   launches become nodes of the same graph, ordered by the event); end_capture on the origin
//   stream fails with CaptureFailed if a joined stream has not been waited on again (unjoined).
// - Event record/wait inside a capture only adds dependencies: a graph's nodes are its kernels.
// - launch() copies `args_size` bytes from `args` before it returns; under capture those bytes
//   are the node's arguments for every replay (frozen).
// - graph_launch() is one submission whatever the graph holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graphrt/hd.hpp"
#include "graphrt/kernels.hpp"

namespace graphrt {

struct StreamObj;
struct EventObj;
struct GraphObj;
struct GraphExecObj;
using StreamRaw = StreamObj*;
using EventRaw = EventObj*;
using GraphRaw = GraphObj*;
using GraphExecRaw = GraphExecObj*;

struct LaunchOpts {
  bool pdl = false;  // programmatic dependent launch; backends without it ignore it
};

struct Features {
  bool graph = false;
  bool pdl = false;
  bool overlap = false;
  bool collectives = false;
};

// What `hello` reports (PROTOCOL.md "Lines").
struct DeviceInfo {
  std::string backend;            // "cpu" | "cuda"
  std::string device;             // e.g. "NVIDIA H200" or "cpu emulation (2 host threads)"
  std::optional<std::string> sm;  // "9.0", or none on cpu
  int sms = 0;                    // multiprocessors (cpu: device threads per stream = 1)
  std::string driver;             // driver/runtime version, or "none"
  Features features;
};

// Clocks and throttle reasons at one moment (PROTOCOL.md rep `clocks`); -1 where unread.
struct ClockReading {
  int sm_mhz = -1;
  int mem_mhz = -1;
  int temp_c = -1;
  double power_w = -1;
  std::uint64_t reasons_mask = 0;    // NVML clocks event reasons
  std::vector<std::string> reasons;  // their names, e.g. "gpu_idle", "sw_power_cap"
};

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  virtual DeviceInfo info() const = 0;

  // Device memory. alloc() never returns null (throws); free(nullptr) is a no-op.
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* ptr) noexcept = 0;

  // Synchronous copies and memset: they wait for all device work first. Illegal during capture.
  virtual void memcpy_h2d(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void memcpy_d2h(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void memcpy_d2d(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void memset(void* dst, int value, std::size_t bytes) = 0;

  // Streams.
  virtual StreamRaw compute_stream() = 0;
  virtual StreamRaw stream_create() = 0;
  virtual void stream_destroy(StreamRaw stream) noexcept = 0;
  virtual void stream_synchronize(StreamRaw stream) = 0;

  // Events, timestamped on the device when the stream reaches them.
  virtual EventRaw event_create() = 0;
  virtual void event_destroy(EventRaw event) noexcept = 0;
  virtual void event_record(EventRaw event, StreamRaw stream) = 0;
  virtual void stream_wait_event(StreamRaw stream, EventRaw event) = 0;
  // Milliseconds between two recorded events; waits for `end` to complete.
  virtual float event_elapsed_ms(EventRaw start, EventRaw end) = 0;

  // Kernels. `args` points to a KernelDesc::args_size-byte Args struct of kernel `id`.
  virtual void launch(StreamRaw stream, KernelId id, Dim3 grid, Dim3 block, const void* args,
                      std::size_t args_size, LaunchOpts opts) = 0;

  // Capture and graphs.
  virtual void begin_capture(StreamRaw stream) = 0;
  virtual GraphRaw end_capture(StreamRaw stream) = 0;  // throws CaptureFailed; then not capturing
  virtual bool is_capturing(StreamRaw stream) const = 0;
  virtual std::size_t graph_node_count(GraphRaw graph) = 0;
  virtual GraphExecRaw instantiate(GraphRaw graph) = 0;
  virtual void graph_launch(GraphExecRaw exec, StreamRaw stream) = 0;
  virtual void graph_destroy(GraphRaw graph) noexcept = 0;
  virtual void exec_destroy(GraphExecRaw exec) noexcept = 0;

  // Waits for all work on all streams; rethrows a sticky device error as DeviceError.
  virtual void synchronize() = 0;

  // The device's clocks now; none where the backend has none (cpu) or cannot read them.
  virtual std::optional<ClockReading> read_clocks() { return std::nullopt; }
  // The volatile uncorrected ECC errors the device has counted since the driver loaded; none where
  // the backend has no device (cpu) or the device counts none (ECC off, no NVML).
  virtual std::optional<std::uint64_t> read_ecc_errors() { return std::nullopt; }
};

}  // namespace graphrt
