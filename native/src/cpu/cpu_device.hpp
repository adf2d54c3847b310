// The CPU backend's device model: a stream is a device thread consuming a queue of work items;
// events are timestamped by the device thread that reaches them; a graph is the list of kernel
// nodes recorded during capture (arguments copied at launch, so frozen), replayed as one item.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "graphrt/kernels.hpp"

namespace graphrt::cpu {

using Clock = std::chrono::steady_clock;

// Runs kernel `K` over the whole grid: body() for every block x thread, in index order.
using GridFn = void (*)(Dim3 grid, Dim3 block, const void* args);

inline constexpr std::size_t kMaxArgsBytes = 128;

struct KernelCall {
  KernelId id;  // KernelId::Count for a host function (CpuBackend::launch_host)
  GridFn fn;
  Dim3 grid;
  Dim3 block;
  alignas(16) std::array<std::byte, kMaxArgsBytes> args;
  void run() const { fn(grid, block, args.data()); }
};

struct GraphNode {
  KernelCall call;
  std::vector<std::size_t> deps;  // indices of earlier nodes
};

// Both a captured graph and its instantiation: nodes in recorded order, which is a topological
// order because a node only ever depends on nodes recorded before it.
struct CpuGraph {
  std::vector<GraphNode> nodes;
};

struct Capture;
class CpuStream;

struct CpuEvent {
  // Written by the host at record time, read by device threads (under Device::mutex).
  std::uint64_t recorded = 0;
  std::uint64_t completed = 0;
  Clock::time_point stamp{};
  // When recorded inside a capture: the capture and the nodes a waiter would depend on.
  std::shared_ptr<Capture> capture;
  std::vector<std::size_t> capture_deps;
};

struct RecordItem {
  CpuEvent* event;
  std::uint64_t generation;
};
struct WaitItem {
  CpuEvent* event;
  std::uint64_t generation;
};
struct GraphItem {
  std::shared_ptr<const CpuGraph> exec;
};
using WorkItem = std::variant<KernelCall, RecordItem, WaitItem, GraphItem>;

struct Capture {
  CpuStream* origin = nullptr;
  std::unique_ptr<CpuGraph> graph = std::make_unique<CpuGraph>();
  std::vector<CpuStream*> members;  // origin first, then every stream that joined
  bool invalid = false;
  std::string invalid_reason;
};

// State shared by all device threads: one lock and one condition variable keep it simple and
// correct (queues, completion counters and event generations all change under it).
struct Device {
  std::mutex mutex;
  std::condition_variable changed;
};

class CpuStream {
 public:
  explicit CpuStream(Device& device);
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;
  ~CpuStream();  // drains the queue, then joins the device thread

  void submit(WorkItem item);  // caller does not hold device.mutex
  void wait_idle();            // caller does not hold device.mutex
  bool idle_locked() const { return completed_ == submitted_; }

  // Capture membership (host thread only).
  std::shared_ptr<Capture> capture;
  std::vector<std::size_t> tail;  // the nodes the next captured launch depends on

 private:
  void loop();
  void execute(const WorkItem& item);

  Device& device_;
  std::deque<WorkItem> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace graphrt::cpu
