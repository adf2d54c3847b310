// Trace mode (orch_trace.hpp, orch_inject.h "Trace mode"): CUPTI's concurrent-kernel activity
// records (start and end on the GPU, CUPTI's clock) kept in the library until a rank library takes
// them (orch_inject_kernels), and each graph instantiation's node count and host time. A rank
// library delimits its steps with orch_inject_timestamp(), the same clock as the records.
#include "orch_trace.hpp"

#include "orch_inject.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#define ORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace orch_inject {
namespace {

// CUPTI's buffers: 8 MiB each, aligned as cupti_activity.h asks (8 bytes).
constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kAlign = 8;
// Records kept at most before the rank library takes them; past it, counted as dropped. A probe's
// steps are few (a probe is not a timed rep), so a full store says a step launched millions.
constexpr size_t kMaxKernels = size_t{1} << 22;
constexpr size_t kMaxGraphs = size_t{1} << 16;

std::mutex g_mutex;  // guards the three below; CUPTI completes buffers on its own thread
std::vector<orch_inject_kernel> g_kernels;
std::vector<orch_inject_graph> g_graphs;
unsigned long long g_dropped = 0;
bool g_tracing = false;
// CUPTI's clock when tracing began: every time the library gives is since then. CUPTI's own are ns
// since the epoch, past 2^53, which JSON's numbers (and the protocol's safe integers) cannot hold;
// since the trace began they stay below 2^53 for 104 days. ORCH_INJECT_EPOCH_TIMES=1 gives CUPTI's
// own times, as before (bench/h200/user-rank/truth2.sh shows what orch makes of them).
uint64_t g_origin = 0;

uint64_t since_origin(uint64_t t) { return t > g_origin ? t - g_origin : 0; }

// Every cuGraphInstantiate* params struct begins with these two (generated_cuda_meta.h).
struct InstantiatePrefix {
  CUgraphExec* exec;
  CUgraph graph;
};
static_assert(offsetof(cuGraphInstantiateWithFlags_params, hGraph) == offsetof(InstantiatePrefix, graph));
static_assert(offsetof(cuGraphInstantiateWithParams_params, hGraph) == offsetof(InstantiatePrefix, graph));
static_assert(offsetof(cuGraphInstantiate_v2_params, hGraph) == offsetof(InstantiatePrefix, graph));

// The kernel record this file reads: CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL is delivered as
// CUpti_ActivityKernel10 by CUPTI API 13 (cupti_activity.h). Each field read is pinned to the offset
// and width it has in CUDA 13.0's header, and the CUPTI major version to 13: a CUPTI whose record
// moved a field, or another major version (which may deliver another record version), fails the
// build here instead of reading the wrong bytes on the card. To move on: read the new header's
// record for CONCURRENT_KERNEL, and update the struct name and these numbers together.
static_assert(CUPTI_API_VERSION >= 130000 && CUPTI_API_VERSION < 140000, "orch_trace.cpp reads CUPTI 13's CUpti_ActivityKernel10: check the record layout of this CUPTI");
static_assert(offsetof(CUpti_ActivityKernel10, kind) == 0 && sizeof(CUpti_ActivityKernel10::kind) == 4);
static_assert(offsetof(CUpti_ActivityKernel10, start) == 16 && sizeof(CUpti_ActivityKernel10::start) == 8);
static_assert(offsetof(CUpti_ActivityKernel10, end) == 24 && sizeof(CUpti_ActivityKernel10::end) == 8);
static_assert(offsetof(CUpti_ActivityKernel10, streamId) == 48 && sizeof(CUpti_ActivityKernel10::streamId) == 4);
static_assert(offsetof(CUpti_ActivityKernel10, graphId) == 156 && sizeof(CUpti_ActivityKernel10::graphId) == 4);
static_assert(sizeof(CUpti_ActivityKernel10) == 216);

using GetNodesFn = CUresult (*)(CUgraph, CUgraphNode*, size_t*);

GetNodesFn get_nodes() {
  static GetNodesFn fn = [] {
    void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return cuda != nullptr ? reinterpret_cast<GetNodesFn>(::dlsym(cuda, "cuGraphGetNodes")) : nullptr;
  }();
  return fn;
}

void CUPTIAPI on_buffer_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI on_buffer_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (g_kernels.size() >= kMaxKernels) {
      ++g_dropped;
      continue;
    }
    g_kernels.push_back({since_origin(k->start), since_origin(k->end), k->graphId, k->streamId});
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
  std::free(buffer);
}

}  // namespace

bool trace_wanted() {
  const char* v = std::getenv("ORCH_INJECT_TRACE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

std::string trace_start() {
  CUptiResult r = cuptiActivityRegisterCallbacks(on_buffer_request, on_buffer_complete);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    return std::string("CUPTI kernel activity could not be enabled: ") +
           (cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s != nullptr ? s : "CUPTI error " + std::to_string(r));
  }
  const char* epoch = std::getenv("ORCH_INJECT_EPOCH_TIMES");
  uint64_t origin = 0;
  if (epoch == nullptr || std::strcmp(epoch, "1") != 0) (void)cuptiGetTimestamp(&origin);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_origin = origin;
  g_tracing = true;
  return "";
}

bool is_instantiate(const std::string& name) {
  return name == "cuGraphInstantiate" || name == "cuGraphInstantiate_v2" || name == "cuGraphInstantiateWithFlags" ||
         name == "cuGraphInstantiateWithParams" || name == "cuGraphInstantiateWithParams_ptsz";
}

void on_instantiate(const CUpti_CallbackData* cb) {
  uint64_t now = 0;
  (void)cuptiGetTimestamp(&now);
  // the enter's timestamp waits in CUPTI's per-call slot for the exit
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = now;
    return;
  }
  const auto* p = static_cast<const InstantiatePrefix*>(cb->functionParams);
  orch_inject_graph g{};
  g.instantiate_ns = now - *cb->correlationData;
  uint32_t id = 0;
  if (cuptiGetGraphId(p->graph, &id) == CUPTI_SUCCESS) g.graph_id = id;
  if (p->exec != nullptr && *p->exec != nullptr && cuptiGetGraphExecId(*p->exec, &id) == CUPTI_SUCCESS) g.exec_id = id;
  size_t nodes = 0;
  const GetNodesFn fn = get_nodes();
  if (fn != nullptr && fn(p->graph, nullptr, &nodes) == CUDA_SUCCESS) g.nodes = nodes;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_graphs.size() < kMaxGraphs) g_graphs.push_back(g);
}

}  // namespace orch_inject

using namespace orch_inject;

ORCH_EXPORT int orch_inject_tracing(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_tracing ? 1 : 0;
}

ORCH_EXPORT unsigned long long orch_inject_timestamp(void) {
  uint64_t t = 0;
  return orch_inject_tracing() != 0 && cuptiGetTimestamp(&t) == CUPTI_SUCCESS ? since_origin(t) : 0;
}

ORCH_EXPORT size_t orch_inject_kernels(struct orch_inject_kernel* out, size_t cap, unsigned long long* dropped) {
  if (orch_inject_tracing() == 0) return 0;
  // Completes every buffer CUPTI holds (its callback takes g_mutex): not under the lock.
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t n = g_kernels.size() < cap ? g_kernels.size() : cap;
  if (n > 0) std::memcpy(out, g_kernels.data(), n * sizeof(orch_inject_kernel));
  g_kernels.erase(g_kernels.begin(), g_kernels.begin() + static_cast<std::ptrdiff_t>(n));
  if (dropped != nullptr) *dropped = g_dropped;
  return n;
}

ORCH_EXPORT size_t orch_inject_graphs(struct orch_inject_graph* out, size_t cap) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t n = g_graphs.size() < cap ? g_graphs.size() : cap;
  if (n > 0) std::memcpy(out, g_graphs.data(), n * sizeof(orch_inject_graph));
  g_graphs.erase(g_graphs.begin(), g_graphs.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}
