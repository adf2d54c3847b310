#include "cpu_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include "cpu_kernels.hpp"
#include "graphrt/backends.hpp"
#include "graphrt/error.hpp"
#include "../launch_checks.hpp"

namespace graphrt::cpu {
namespace {

constexpr std::align_val_t kAlign{256};

// An instantiated graph: shared with the queue items replaying it, so destroying the exec while
// a replay is in flight is safe (as in CUDA).
struct ExecBox {
  std::shared_ptr<const CpuGraph> graph;
};

CpuEvent* event_of(EventRaw raw) { return reinterpret_cast<CpuEvent*>(raw); }
CpuGraph* graph_of(GraphRaw raw) { return reinterpret_cast<CpuGraph*>(raw); }
ExecBox* exec_of(GraphExecRaw raw) { return reinterpret_cast<ExecBox*>(raw); }

void merge_deps(std::vector<std::size_t>& into, const std::vector<std::size_t>& from) {
  for (std::size_t d : from)
    if (std::find(into.begin(), into.end(), d) == into.end()) into.push_back(d);
}

}  // namespace

CpuBackend::CpuBackend() { streams_.push_back(std::make_unique<CpuStream>(device_)); }

CpuBackend::~CpuBackend() {
  wait_all_idle();
  streams_.clear();
  for (void* p : allocations_) ::operator delete(p, kAlign);
}

DeviceInfo CpuBackend::info() const {
  DeviceInfo d;
  d.backend = "cpu";
  d.device = "cpu emulation: one device thread per stream, " +
             std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " host cores";
  d.sm = std::nullopt;
  d.sms = 1;
  d.driver = "none";
  d.features = Features{.graph = true, .pdl = false, .overlap = true, .collectives = false};
  return d;
}

CpuStream* CpuBackend::stream(StreamRaw raw) const {
  auto* s = reinterpret_cast<CpuStream*>(raw);
  for (const auto& owned : streams_)
    if (owned.get() == s) return s;
  RT_THROW(Errc::InvalidValue, "InvalidResourceHandle", "unknown stream handle");
}

void CpuBackend::refuse_during_capture(const char* what) {
  if (captures_.empty()) return;
  for (auto& c : captures_) {
    if (!c->invalid) c->invalid_reason = std::string(what) + " during stream capture";
    c->invalid = true;
  }
  RT_THROW(Errc::CaptureFailed, "StreamCaptureUnsupported",
           std::string(what) + " is not permitted while a stream is capturing (it invalidates the capture)");
}

void CpuBackend::wait_all_idle() {
  std::unique_lock lock(device_.mutex);
  device_.changed.wait(lock, [this] {
    return std::all_of(streams_.begin(), streams_.end(), [](const auto& s) { return s->idle_locked(); });
  });
}

void* CpuBackend::alloc(std::size_t bytes) {
  refuse_during_capture("device allocation");
  void* p = ::operator new(std::max<std::size_t>(bytes, 1), kAlign);
  allocations_.insert(p);
  return p;
}

void CpuBackend::free(void* ptr) noexcept {
  if (ptr == nullptr) return;
  wait_all_idle();
  if (allocations_.erase(ptr) == 0) {
    std::fprintf(stderr, "graphrt cpu backend: free of unknown pointer %p ignored\n", ptr);
    return;
  }
  ::operator delete(ptr, kAlign);
}

void CpuBackend::memcpy_h2d(void* dst, const void* src, std::size_t bytes) {
  refuse_during_capture("synchronous memcpy");
  wait_all_idle();
  std::memcpy(dst, src, bytes);
}
void CpuBackend::memcpy_d2h(void* dst, const void* src, std::size_t bytes) {
  memcpy_h2d(dst, src, bytes);
}
void CpuBackend::memcpy_d2d(void* dst, const void* src, std::size_t bytes) {
  memcpy_h2d(dst, src, bytes);
}
void CpuBackend::memset(void* dst, int value, std::size_t bytes) {
  refuse_during_capture("synchronous memset");
  wait_all_idle();
  std::memset(dst, value, bytes);
}

StreamRaw CpuBackend::compute_stream() { return reinterpret_cast<StreamRaw>(streams_.front().get()); }

StreamRaw CpuBackend::stream_create() {
  streams_.push_back(std::make_unique<CpuStream>(device_));
  return reinterpret_cast<StreamRaw>(streams_.back().get());
}

void CpuBackend::stream_destroy(StreamRaw raw) noexcept {
  auto* s = reinterpret_cast<CpuStream*>(raw);
  if (s == streams_.front().get()) return;  // the compute stream belongs to the backend
  auto it = std::find_if(streams_.begin(), streams_.end(), [s](const auto& o) { return o.get() == s; });
  if (it != streams_.end()) streams_.erase(it);  // ~CpuStream drains its queue first
}

void CpuBackend::stream_synchronize(StreamRaw raw) {
  CpuStream* s = stream(raw);
  if (s->capture) refuse_during_capture("stream synchronize");
  s->wait_idle();
}

EventRaw CpuBackend::event_create() { return reinterpret_cast<EventRaw>(new CpuEvent()); }

void CpuBackend::event_destroy(EventRaw raw) noexcept {
  wait_all_idle();  // queued records and waits may still name it
  delete event_of(raw);
}

void CpuBackend::event_record(EventRaw raw, StreamRaw sraw) {
  CpuEvent* e = event_of(raw);
  CpuStream* s = stream(sraw);
  if (s->capture) {
    e->capture = s->capture;
    e->capture_deps = s->tail;
    return;
  }
  std::uint64_t gen = 0;
  {
    std::lock_guard lock(device_.mutex);
    e->capture.reset();
    e->capture_deps.clear();
    gen = ++e->recorded;
  }
  s->submit(RecordItem{e, gen});
}

void CpuBackend::stream_wait_event(StreamRaw sraw, EventRaw raw) {
  CpuEvent* e = event_of(raw);
  CpuStream* s = stream(sraw);
  if (e->capture) {
    RT_CHECK(std::find(captures_.begin(), captures_.end(), e->capture) != captures_.end(), Errc::InvalidValue,
             "StreamCaptureIsolation", "waiting on an event last recorded in a capture that has ended");
    if (!s->capture) {  // a fork: the waiting stream joins the capture
      s->capture = e->capture;
      s->tail = e->capture_deps;
      e->capture->members.push_back(s);
    } else if (s->capture == e->capture) {
      merge_deps(s->tail, e->capture_deps);
    } else {
      refuse_during_capture("waiting on an event of another capture");
    }
    return;
  }
  if (s->capture) refuse_during_capture("waiting on an event recorded outside the capture");
  std::uint64_t gen = 0;
  {
    std::lock_guard lock(device_.mutex);
    gen = e->recorded;
  }
  if (gen > 0) s->submit(WaitItem{e, gen});
}

float CpuBackend::event_elapsed_ms(EventRaw start, EventRaw end) {
  CpuEvent* a = event_of(start);
  CpuEvent* b = event_of(end);
  RT_CHECK(!a->capture && !b->capture, Errc::InvalidValue, "InvalidResourceHandle",
           "elapsed time of an event recorded during capture");
  std::unique_lock lock(device_.mutex);
  RT_CHECK(a->recorded > 0 && b->recorded > 0, Errc::InvalidValue, "InvalidResourceHandle",
           "elapsed time of an event never recorded");
  device_.changed.wait(lock, [a, b] { return a->completed >= a->recorded && b->completed >= b->recorded; });
  return std::chrono::duration<float, std::milli>(b->stamp - a->stamp).count();
}

void CpuBackend::launch(StreamRaw sraw, KernelId id, Dim3 grid, Dim3 block, const void* args,
                        std::size_t args_size, LaunchOpts /*opts: no PDL on the CPU*/) {
  CpuStream* s = stream(sraw);
  checked_kernel(id, grid, block, args_size, "");
  const std::size_t idx = static_cast<std::size_t>(id);
  KernelCall call{id, kGridFns[idx], grid, block, {}};
  std::memcpy(call.args.data(), args, args_size);  // frozen from here on
  enqueue(s, call);
}

void CpuBackend::launch_host(StreamRaw sraw, GridFn fn, const void* args, std::size_t args_size) {
  CpuStream* s = stream(sraw);
  RT_CHECK(fn != nullptr && args_size <= kMaxArgsBytes, Errc::InvalidValue, "InvalidValue",
           "host function without a body, or its args exceed the launch slot");
  KernelCall call{KernelId::Count, fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, {}};
  std::memcpy(call.args.data(), args, args_size);
  enqueue(s, call);
}

void CpuBackend::enqueue(CpuStream* s, const KernelCall& call) {
  if (s->capture) {
    CpuGraph& g = *s->capture->graph;
    g.nodes.push_back(GraphNode{call, s->tail});
    s->tail = {g.nodes.size() - 1};
    return;
  }
  s->submit(call);
}

void CpuBackend::begin_capture(StreamRaw sraw) {
  CpuStream* s = stream(sraw);
  RT_CHECK(!s->capture, Errc::CaptureFailed, "StreamCaptureUnsupported",
           "begin_capture on a stream that is already capturing");
  auto c = std::make_shared<Capture>();
  c->origin = s;
  c->members.push_back(s);
  s->capture = c;
  s->tail.clear();
  captures_.push_back(c);
}

GraphRaw CpuBackend::end_capture(StreamRaw sraw) {
  CpuStream* s = stream(sraw);
  RT_CHECK(s->capture && s->capture->origin == s, Errc::InvalidValue, "IllegalState",
           "end_capture on a stream that did not begin a capture");
  std::shared_ptr<Capture> c = s->capture;
  // Every joined stream's last nodes must be ancestors of the origin's: otherwise unjoined.
  std::vector<bool> reach(c->graph->nodes.size(), false);
  std::vector<std::size_t> todo = s->tail;
  while (!todo.empty()) {
    std::size_t n = todo.back();
    todo.pop_back();
    if (reach[n]) continue;
    reach[n] = true;
    for (std::size_t d : c->graph->nodes[n].deps) todo.push_back(d);
  }
  bool unjoined = false;
  for (CpuStream* m : c->members) {
    if (m != s)
      for (std::size_t n : m->tail) unjoined = unjoined || !reach[n];
    m->capture.reset();
    m->tail.clear();
  }
  captures_.erase(std::find(captures_.begin(), captures_.end(), c));
  if (c->invalid)
    RT_THROW(Errc::CaptureFailed, "StreamCaptureInvalidated", "capture invalidated: " + c->invalid_reason);
  if (unjoined)
    RT_THROW(Errc::CaptureFailed, "StreamCaptureUnjoined",
             "a stream that joined the capture was not joined back into the origin stream");
  return reinterpret_cast<GraphRaw>(c->graph.release());
}

bool CpuBackend::is_capturing(StreamRaw sraw) const { return static_cast<bool>(stream(sraw)->capture); }

std::size_t CpuBackend::graph_node_count(GraphRaw graph) { return graph_of(graph)->nodes.size(); }

GraphExecRaw CpuBackend::instantiate(GraphRaw graph) {
  return reinterpret_cast<GraphExecRaw>(new ExecBox{std::make_shared<const CpuGraph>(*graph_of(graph))});
}

void CpuBackend::graph_launch(GraphExecRaw exec, StreamRaw sraw) {
  CpuStream* s = stream(sraw);
  RT_CHECK(!s->capture, Errc::InvalidValue, "StreamCaptureUnsupported",
           "graph launch into a capturing stream is not supported");
  s->submit(GraphItem{exec_of(exec)->graph});
}

void CpuBackend::graph_destroy(GraphRaw graph) noexcept { delete graph_of(graph); }
void CpuBackend::exec_destroy(GraphExecRaw exec) noexcept { delete exec_of(exec); }

void CpuBackend::synchronize() {
  refuse_during_capture("device synchronize");
  wait_all_idle();
}

}  // namespace graphrt::cpu

namespace graphrt {
std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }
}  // namespace graphrt
