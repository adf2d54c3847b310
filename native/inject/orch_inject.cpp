// liborch_inject.so: counts the driver calls of an unmodified CUDA program through CUPTI callbacks
// (orch_inject.h, ranklib/PROTOCOL.md "Launch counts and clocks"). Callbacks only: activity
// tracing costs microseconds per launch, a counter on API enter costs an atomic add.
//
// The driver is not linked: the library must load (and say "never initialized") in a process
// without CUDA, and where the driver calls InitializeInjection libcuda.so.1 is in the process
// already, so its few entry points are looked up there. NVML is loaded with dlopen as graphrt
// does (native/src/cuda/nvml_clocks.cpp).
#include "orch_inject.h"
#include "orch_nvtx.hpp"
#include "orch_trace.hpp"

#include <cuda.h>
#include <cupti.h>  // and generated_cuda_meta.h: the cu*_params structs of a callback
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#define ORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// What a driver callback id counts as. A launch's kind says where its stream is in its params.
enum class Kind : unsigned char { None, Launch, LaunchEx, LaunchCooperative, Graph, Memcpy, Memset, Sync, Instantiate };

struct Entry {
  Kind kind = Kind::None;
  bool per_thread = false;  // a _ptsz entry point: its stream 0 is the calling thread's default stream
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// By CUPTI's name for the callback id, so that no cbid number is written here.
Entry classify(const std::string& name) {
  const bool ptsz = name.size() > 5 && name.compare(name.size() - 5, 5, "_ptsz") == 0;
  const std::string base = ptsz ? name.substr(0, name.size() - 5) : name;
  if (base == "cuLaunchKernel") return {Kind::Launch, ptsz};
  if (base == "cuLaunchKernelEx") return {Kind::LaunchEx, ptsz};
  if (base == "cuLaunchCooperativeKernel") return {Kind::LaunchCooperative, ptsz};
  if (base == "cuGraphLaunch") return {Kind::Graph, ptsz};
  if (base == "cuCtxSynchronize" || base == "cuCtxSynchronize_v2" || base == "cuStreamSynchronize" ||
      base == "cuEventSynchronize")
    return {Kind::Sync, ptsz};
  if (orch_inject::is_instantiate(name)) return {Kind::Instantiate, ptsz};
  if (starts_with(name, "cuMemcpy")) return {Kind::Memcpy, ptsz};
  if (starts_with(name, "cuMemset")) return {Kind::Memset, ptsz};
  return {};
}

// Filled once by InitializeInjection before any callback is enabled; read-only after.
std::array<Entry, CUPTI_DRIVER_TRACE_CBID_SIZE> g_table;

std::atomic<std::uint64_t> g_kernels{0}, g_captured{0}, g_graphs{0}, g_memcpy{0}, g_memset{0}, g_syncs{0};

// 0: InitializeInjection never ran; 1: counting; 2: it ran and failed (g_failure says why);
// 3: paused (orch_inject_pause: nothing of CUPTI on the driver's path, the counts kept).
enum State : int { kNever = 0, kCounting = 1, kFailed = 2, kPaused = 3 };
std::atomic<int> g_state{kNever};
std::string g_failure;  // written before g_state is stored (release), read after it is loaded (acquire)

// Counting, or paused with the counts kept.
bool counts_valid() {
  const int state = g_state.load(std::memory_order_acquire);
  return state == kCounting || state == kPaused;
}

// The counting subscription; nullptr while paused. Changed only under g_control.
CUpti_SubscriberHandle g_subscriber = nullptr;
std::mutex g_control;  // start, pause and resume, one at a time

using IsCapturingFn = decltype(&cuStreamIsCapturing);
using CtxGetDeviceFn = decltype(&cuCtxGetDevice);
using PciBusIdFn = decltype(&cuDeviceGetPCIBusId);
IsCapturingFn g_is_capturing = nullptr;

// The driver already in the process; nullptr where there is none.
void* driver() { return ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

CUstream launch_stream(const Entry& e, const void* params) {
  CUstream s = nullptr;
  switch (e.kind) {
    case Kind::Launch: s = static_cast<const cuLaunchKernel_params*>(params)->hStream; break;
    case Kind::LaunchEx: {
      const CUlaunchConfig* config = static_cast<const cuLaunchKernelEx_params*>(params)->config;
      s = config != nullptr ? config->hStream : nullptr;
      break;
    }
    case Kind::LaunchCooperative: s = static_cast<const cuLaunchCooperativeKernel_params*>(params)->hStream; break;
    default: break;
  }
  // cuStreamIsCapturing (not _ptsz) reads stream 0 as the legacy stream; a _ptsz launch meant its own.
  if (s == nullptr && e.per_thread) s = CU_STREAM_PER_THREAD;
  return s;
}

void detach_at_exit(const CUpti_CallbackData* cb, CUpti_CallbackId cbid);

void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= g_table.size()) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  detach_at_exit(cb, cbid);
  // pausing: nothing more is counted (another thread's calls while CUPTI detaches are not the rep's)
  if (g_state.load(std::memory_order_relaxed) != kCounting) return;
  const Entry e = g_table[cbid];
  if (e.kind == Kind::Instantiate) return orch_inject::on_instantiate(cb);  // timed: enter and exit
  if (cb->callbackSite != CUPTI_API_ENTER) return;  // counted once per call, failed calls too
  switch (e.kind) {
    case Kind::Launch:
    case Kind::LaunchEx:
    case Kind::LaunchCooperative: {
      // An invalidated capture is still a capture: its launch is not eager work either.
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      const bool capturing = g_is_capturing(launch_stream(e, cb->functionParams), &status) == CUDA_SUCCESS &&
                             status != CU_STREAM_CAPTURE_STATUS_NONE;
      (capturing ? g_captured : g_kernels).fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case Kind::Graph: g_graphs.fetch_add(1, std::memory_order_relaxed); break;
    case Kind::Memcpy: g_memcpy.fetch_add(1, std::memory_order_relaxed); break;
    case Kind::Memset: g_memset.fetch_add(1, std::memory_order_relaxed); break;
    case Kind::Sync: g_syncs.fetch_add(1, std::memory_order_relaxed); break;
    case Kind::Instantiate:
    case Kind::None: break;
  }
}

// ORCH_INJECT_ONLY=kernels,graphs,memcpy,memset,syncs (or none): count only these kinds, the
// others' callbacks never enabled. For measuring what each kind of callback costs (bench/h200/
// user-rank/isolate.sh); unset, everything is counted. A kind not counted reads 0.
bool counted(Kind k) {
  if (k == Kind::Instantiate) return orch_inject::trace_wanted();  // timed in trace mode only
  const char* only = std::getenv("ORCH_INJECT_ONLY");
  if (only == nullptr) return true;
  const bool launch = k == Kind::Launch || k == Kind::LaunchEx || k == Kind::LaunchCooperative;
  const char* name = launch ? "kernels" : k == Kind::Graph ? "graphs" : k == Kind::Memcpy ? "memcpy" : k == Kind::Memset ? "memset" : "syncs";
  const std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  return cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s != nullptr ? s : "CUPTI error " + std::to_string(r);
}

void fail(std::string why) {
  g_failure = std::move(why);
  g_state.store(kFailed, std::memory_order_release);
}

// Subscribes and enables the callbacks of what is counted (and trace mode's); "" on success, else
// why not, nothing left subscribed. start() and orch_inject_resume() both come here.
std::string subscribe() {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult r = cuptiSubscribe(&subscriber, on_driver_call, nullptr);
  if (r != CUPTI_SUCCESS)
    return "CUPTI subscribe failed: " + cupti_error(r) +
           (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? " (another profiler holds CUPTI)" : "");
  // Only the ids counted: every other driver call runs without a callback.
  for (std::uint32_t id = 1; id < g_table.size(); ++id) {
    if (g_table[id].kind == Kind::None || !counted(g_table[id].kind)) continue;
    r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (r != CUPTI_SUCCESS) {
      const char* name = nullptr;
      (void)cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name);
      (void)cuptiUnsubscribe(subscriber);
      return std::string("CUPTI enable callback failed for ") + (name != nullptr ? name : "?") + ": " + cupti_error(r);
    }
  }
  g_subscriber = subscriber;
  return "";
}

void start() {
  std::lock_guard<std::mutex> lock(g_control);
  for (std::uint32_t id = 1; id < g_table.size(); ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) == CUPTI_SUCCESS && name != nullptr)
      g_table[id] = classify(name);
  }
  // A library with nothing to count and no trace subscribes to nothing: a CUPTI subscriber with
  // no callback enabled still cost a PyTorch graph step 11-13 % on the H200 (bench/h200/user-rank/
  // truth2.sh measures it; ORCH_INJECT_IDLE_SUBSCRIBE=1 subscribes anyway, as before).
  bool any = orch_inject::trace_wanted();
  for (std::uint32_t id = 1; id < g_table.size() && !any; ++id) any = g_table[id].kind != Kind::None && counted(g_table[id].kind);
  const char* idle_subscribe = std::getenv("ORCH_INJECT_IDLE_SUBSCRIBE");
  if (!any && (idle_subscribe == nullptr || std::string(idle_subscribe) != "1"))
    return fail("idle: ORCH_INJECT_ONLY=" + std::string(std::getenv("ORCH_INJECT_ONLY") != nullptr ? std::getenv("ORCH_INJECT_ONLY") : "") +
                " counts nothing, so nothing is subscribed");
  void* cuda = driver();
  g_is_capturing = cuda != nullptr ? reinterpret_cast<IsCapturingFn>(::dlsym(cuda, "cuStreamIsCapturing")) : nullptr;
  if (g_is_capturing == nullptr) return fail("cuStreamIsCapturing not found: libcuda.so.1 is not in the process");
  const std::string why = subscribe();
  if (!why.empty()) return fail(why);
  if (orch_inject::trace_wanted()) {
    const std::string trace_why = orch_inject::trace_start();
    if (!trace_why.empty()) {
      (void)cuptiUnsubscribe(g_subscriber);
      g_subscriber = nullptr;
      return fail("ORCH_INJECT_TRACE=1: " + trace_why);
    }
  }
  g_state.store(kCounting, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// Pause and resume (orch_inject.h): a rank library counts a rep's warm-up steps and pauses the
// library for its timed steps. A CUPTI subscriber with no callback enabled still cost a PyTorch
// graph step ~10 % on the H200 (bench/h200/runs/2026-12-04/truth2-run2.txt, table 2b), so a pause
// takes CUPTI off the driver's path, not only the callbacks.

// ORCH_INJECT_PAUSE: `finalize` (the default) detaches CUPTI from the process (cuptiFinalize,
// CUPTI's dynamic detach); `unsubscribe` only ends the subscription; `never` refuses every pause
// (a rank library then counts the timed steps, as before pause existed). bench/h200/user-rank/
// counting3.sh measures all three on one card.
enum class PauseMode { Finalize, Unsubscribe, Never, Unknown };

PauseMode pause_mode() {
  const char* mode = std::getenv("ORCH_INJECT_PAUSE");
  const std::string m = mode != nullptr ? mode : "";
  if (m.empty() || m == "finalize") return PauseMode::Finalize;
  if (m == "unsubscribe") return PauseMode::Unsubscribe;
  return m == "never" ? PauseMode::Never : PauseMode::Unknown;
}

// Why the last pause was refused while counting went on, as orch_inject_status says it; nullptr
// after a pause that was not. Each sentence is kept for the life of the process (status's promise),
// one per different reason (a rep refused under ORCH_INJECT_PAUSE=never reuses the last): few.
std::atomic<const std::string*> g_refusal{nullptr};
const std::string* g_last_refusal = nullptr;  // under g_control

int refuse(const std::string& why) {
  const std::string text = "counting; the last pause was refused: " + why;
  if (g_last_refusal == nullptr || *g_last_refusal != text) g_last_refusal = new std::string(text);
  g_refusal.store(g_last_refusal, std::memory_order_release);
  return 0;
}

// CUPTI's dynamic detach is safe at the exit site of a driver call (cupti_activity.h,
// cuptiFinalize; NVIDIA's cupti_finalize sample; kineto's teardown, which found a finalize from any
// other point racing other threads' CUPTI calls). So orch_inject_pause makes one driver call of its
// own, cuCtxSynchronize (the docs ask that the work be synchronized too), with its callback on, and
// finalizes at that call's exit on the pausing thread. Set under g_control; read in the callback.
std::atomic<bool> g_detach_wanted{false};
std::thread::id g_detach_thread;
bool g_detached = false;
CUptiResult g_detach_result = CUPTI_SUCCESS;

void detach_at_exit(const CUpti_CallbackData* cb, CUpti_CallbackId cbid) {
  if (!g_detach_wanted.load(std::memory_order_acquire) || cb->callbackSite != CUPTI_API_EXIT ||
      g_table[cbid].kind != Kind::Sync || std::this_thread::get_id() != g_detach_thread)
    return;
  g_detach_wanted.store(false, std::memory_order_relaxed);
  g_detach_result = cuptiFinalize();
  g_detached = true;
}

// Detaches CUPTI at the exit of this thread's cuCtxSynchronize. "" once detached (the subscription
// went with it); else why not, and whether CUPTI is still as it was (`intact`: counting may go on).
std::string finalize_at_exit(bool* intact) {
  *intact = true;
  using SyncFn = decltype(&cuCtxSynchronize);
  void* cuda = driver();
  const auto sync = cuda != nullptr ? reinterpret_cast<SyncFn>(::dlsym(cuda, "cuCtxSynchronize")) : nullptr;
  if (sync == nullptr) return "cuCtxSynchronize not found in libcuda.so.1";
  for (std::uint32_t id = 1; id < g_table.size(); ++id) {
    if (g_table[id].kind != Kind::Sync) continue;
    const CUptiResult r = cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (r != CUPTI_SUCCESS) return "CUPTI enable callback failed for the detach's cuCtxSynchronize: " + cupti_error(r);
  }
  g_detached = false;
  g_detach_thread = std::this_thread::get_id();
  g_detach_wanted.store(true, std::memory_order_release);
  (void)sync();  // its exit callback detaches; its own result does not matter
  g_detach_wanted.store(false, std::memory_order_relaxed);
  if (!g_detached) {
    // counting goes on as it was: a sync id not counted (ORCH_INJECT_ONLY) gets its callback off again
    for (std::uint32_t id = 1; id < g_table.size(); ++id)
      if (g_table[id].kind == Kind::Sync && !counted(Kind::Sync))
        (void)cuptiEnableCallback(0, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    return "the detach's cuCtxSynchronize made no exit callback on this thread";
  }
  *intact = false;
  g_subscriber = nullptr;  // cuptiFinalize ended every subscription
  return g_detach_result == CUPTI_SUCCESS ? "" : "cuptiFinalize failed: " + cupti_error(g_detach_result);
}

const char* paused_status(PauseMode mode) {
  return mode == PauseMode::Unsubscribe
             ? "paused: unsubscribed from CUPTI (ORCH_INJECT_PAUSE=unsubscribe) until orch_inject_resume; counts kept"
             : "paused: CUPTI detached (cuptiFinalize) until orch_inject_resume; counts kept";
}
std::atomic<const char*> g_paused_status{""};

}  // namespace

ORCH_EXPORT int orch_inject_pause(void) {
  std::lock_guard<std::mutex> lock(g_control);
  const int state = g_state.load(std::memory_order_acquire);
  if (state == kPaused) return 1;
  if (state != kCounting) return 0;  // orch_inject_status says why
  if (orch_inject::trace_wanted()) return refuse("trace mode never pauses (a trace is a probe, not a timed rep)");
  // a per_rep program's answer is its whole process's counts at exit (jobs/per-rep-counts.ts): a
  // pause would leave its timed steps out of them
  const char* report = std::getenv("ORCH_INJECT_REPORT");
  if (report != nullptr && *report != '\0')
    return refuse("ORCH_INJECT_REPORT is set: a per_rep program's counts are its whole process's, so it never pauses");
  const PauseMode mode = pause_mode();
  if (mode == PauseMode::Never) return refuse("ORCH_INJECT_PAUSE=never");
  if (mode == PauseMode::Unknown)
    return refuse(std::string("ORCH_INJECT_PAUSE=") + std::getenv("ORCH_INJECT_PAUSE") +
                  " is none of finalize, unsubscribe, never: set one of them or unset it (finalize)");
  g_paused_status.store(paused_status(mode), std::memory_order_relaxed);
  g_state.store(kPaused, std::memory_order_release);  // from here no callback counts
  if (mode == PauseMode::Unsubscribe) {
    const CUptiResult r = cuptiUnsubscribe(g_subscriber);
    if (r != CUPTI_SUCCESS) {
      g_state.store(kCounting, std::memory_order_release);
      return refuse("cuptiUnsubscribe failed: " + cupti_error(r));
    }
    g_subscriber = nullptr;
  } else {
    bool intact = true;
    const std::string why = finalize_at_exit(&intact);
    if (!why.empty() && intact) {
      g_state.store(kCounting, std::memory_order_release);
      return refuse(why);
    }
    if (!why.empty()) {  // CUPTI half gone: its counts can no longer be trusted
      fail("pause: " + why);
      return 0;
    }
  }
  g_refusal.store(nullptr, std::memory_order_release);
  return 1;
}

ORCH_EXPORT int orch_inject_resume(void) {
  std::lock_guard<std::mutex> lock(g_control);
  const int state = g_state.load(std::memory_order_acquire);
  if (state == kCounting) return 1;
  if (state != kPaused) return 0;  // orch_inject_status says why
  const std::string why = subscribe();
  if (!why.empty()) {
    fail("resume: " + why);
    return 0;
  }
  g_state.store(kCounting, std::memory_order_release);
  return 1;
}

namespace {

// ---------------------------------------------------------------------------------------------
// NVML, declared here as graphrt declares it (nvml.h is not part of every CUDA toolkit); 0 is
// NVML_SUCCESS.

using NvmlDevice = void*;
using NvmlEventSet = void*;
struct NvmlEventData {  // nvmlEventData_t, as nvmlEventSetWait_v2 fills it
  NvmlDevice device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
constexpr unsigned long long kXidCriticalError = 0x8ULL;  // nvmlEventTypeXidCriticalError
constexpr int kClockSm = 1, kClockMem = 2, kTempGpu = 0;   // NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU
constexpr int kEccUncorrected = 1, kEccVolatile = 0;       // NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC

// nvmlClocksEventReason* bits by bit index, named as native/src/cuda/nvml_clocks.cpp names them.
constexpr const char* kReasonNames[] = {
    "gpu_idle",           "applications_clocks_setting", "sw_power_cap",
    "hw_slowdown",        "sync_boost",                  "sw_thermal_slowdown",
    "hw_thermal_slowdown", "hw_power_brake_slowdown",    "display_clock_setting",
};

struct Nvml {
  bool ok = false;
  int (*by_pci)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  int (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  int (*power)(NvmlDevice, unsigned*) = nullptr;
  int (*ecc)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  int (*register_events)(NvmlDevice, unsigned long long, NvmlEventSet) = nullptr;
  int (*wait)(NvmlEventSet, NvmlEventData*, unsigned) = nullptr;
  NvmlEventSet events = nullptr;
  CtxGetDeviceFn ctx_device = nullptr;
  PciBusIdFn pci_bus_id = nullptr;
  std::map<NvmlDevice, unsigned long long> xids;  // per device seen: XID events so far

  Nvml() {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    void* cuda = driver();
    if (lib == nullptr || cuda == nullptr) return;
    auto sym = [lib](const char* name) { return ::dlsym(lib, name); };
    auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    by_pci = reinterpret_cast<decltype(by_pci)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    clock = reinterpret_cast<decltype(clock)>(sym("nvmlDeviceGetClockInfo"));
    reasons = reinterpret_cast<decltype(reasons)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (reasons == nullptr) reasons = reinterpret_cast<decltype(reasons)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    temperature = reinterpret_cast<decltype(temperature)>(sym("nvmlDeviceGetTemperature"));
    power = reinterpret_cast<decltype(power)>(sym("nvmlDeviceGetPowerUsage"));
    ecc = reinterpret_cast<decltype(ecc)>(sym("nvmlDeviceGetTotalEccErrors"));
    register_events = reinterpret_cast<decltype(register_events)>(sym("nvmlDeviceRegisterEvents"));
    wait = reinterpret_cast<decltype(wait)>(sym("nvmlEventSetWait_v2"));
    auto create_set = reinterpret_cast<int (*)(NvmlEventSet*)>(sym("nvmlEventSetCreate"));
    ctx_device = reinterpret_cast<CtxGetDeviceFn>(::dlsym(cuda, "cuCtxGetDevice"));
    pci_bus_id = reinterpret_cast<PciBusIdFn>(::dlsym(cuda, "cuDeviceGetPCIBusId"));
    if (init == nullptr || by_pci == nullptr || clock == nullptr || ctx_device == nullptr || pci_bus_id == nullptr ||
        init() != 0)
      return;
    if (register_events == nullptr || wait == nullptr || create_set == nullptr || create_set(&events) != 0) events = nullptr;
    ok = true;
  }

  // The XID counter of `dev`, registering the device for XID events the first time it is seen.
  unsigned long long& xid_counter(NvmlDevice dev) {
    const auto [it, added] = xids.emplace(dev, 0ULL);
    if (added && events != nullptr) (void)register_events(dev, kXidCriticalError, events);
    return it->second;
  }

  // Takes every event waiting, without blocking (timeout 0).
  void drain() {
    if (events == nullptr) return;
    NvmlEventData e{};
    while (wait(events, &e, 0) == 0)
      if ((e.event_type & kXidCriticalError) != 0) ++xid_counter(e.device);
  }
};

std::mutex g_nvml_mutex;

// Made on the first call, never destroyed: NVML's and the driver's teardown at exit may run first.
Nvml& nvml() {
  static Nvml* n = new Nvml();
  return *n;
}

}  // namespace

ORCH_EXPORT int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, start);
  return 1;
}

ORCH_EXPORT int orch_inject_read(struct orch_inject_counts* out) {
  const bool counting = counts_valid();
  *out = {};
  out->abi = ORCH_INJECT_ABI;
  if (!counting) return 0;
  out->initialized = 1;
  out->kernels = g_kernels.load(std::memory_order_relaxed);
  out->captured = g_captured.load(std::memory_order_relaxed);
  out->graphs = g_graphs.load(std::memory_order_relaxed);
  out->memcpy = g_memcpy.load(std::memory_order_relaxed);
  out->memset = g_memset.load(std::memory_order_relaxed);
  out->syncs = g_syncs.load(std::memory_order_relaxed);
  return 1;
}

ORCH_EXPORT const char* orch_inject_status(void) {
  switch (g_state.load(std::memory_order_acquire)) {
    case kCounting: {
      const std::string* refused = g_refusal.load(std::memory_order_acquire);
      return refused != nullptr ? refused->c_str() : "counting";
    }
    case kFailed: return g_failure.c_str();
    case kPaused: return g_paused_status.load(std::memory_order_relaxed);
    default:
      return "never initialized: the CUDA driver did not call InitializeInjection (no cuInit in this process, or "
             "CUDA_INJECTION64_PATH not set)";
  }
}

orch_inject::Counts orch_inject::counts_now() {
  Counts c;
  if (!counts_valid()) return c;
  c.kernels = g_kernels.load(std::memory_order_relaxed);
  c.captured = g_captured.load(std::memory_order_relaxed);
  c.graphs = g_graphs.load(std::memory_order_relaxed);
  c.memcpy = g_memcpy.load(std::memory_order_relaxed);
  c.memset = g_memset.load(std::memory_order_relaxed);
  c.syncs = g_syncs.load(std::memory_order_relaxed);
  return c;
}

std::string orch_inject::json_escaped(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') out += '\\';
    if (c >= 0x20) out += static_cast<char>(c);
  }
  return out;
}

namespace {

// ORCH_INJECT_REPORT=<file>: at the process's exit, one JSON line of the counts since
// InitializeInjection and the status, for a program orch runs once per rep (run.mode: per_rep),
// which has no rank library to read them per step; orch divides them by the steps the rep reported
// (jobs/per-rep-counts.ts). A library the driver never loaded writes nothing: orch says so.
void write_exit_report() {
  const char* path = std::getenv("ORCH_INJECT_REPORT");
  if (path == nullptr || *path == '\0') return;
  orch_inject_counts c{};
  (void)orch_inject_read(&c);
  std::FILE* f = std::fopen(path, "a");  // one line per CUDA process of the rep: orch sums them
  if (f == nullptr) return;
  std::fprintf(f, "{\"abi\":%llu,\"initialized\":%llu,\"status\":\"%s\",\"kernels\":%llu,\"captured\":%llu,\"graphs\":%llu,\"memcpy\":%llu,\"memset\":%llu,\"syncs\":%llu%s}\n",
               static_cast<unsigned long long>(c.abi), static_cast<unsigned long long>(c.initialized), orch_inject::json_escaped(orch_inject_status()).c_str(),
               static_cast<unsigned long long>(c.kernels), static_cast<unsigned long long>(c.captured), static_cast<unsigned long long>(c.graphs),
               static_cast<unsigned long long>(c.memcpy), static_cast<unsigned long long>(c.memset), static_cast<unsigned long long>(c.syncs), orch_inject::nvtx_report_fields().c_str());
  std::fclose(f);
}

// Registered at load, after this file's statics were made: exit handlers run in reverse, so the
// report is written before g_failure is destroyed.
__attribute__((constructor)) void arm_exit_report() {
  if (std::getenv("ORCH_INJECT_REPORT") != nullptr) std::atexit(write_exit_report);
}

// NVML's handle of the calling thread's current CUDA device; nullptr without one. Under g_nvml_mutex.
NvmlDevice current_device(Nvml& n) {
  CUdevice dev = 0;
  char bus[32] = {};
  NvmlDevice handle = nullptr;
  if (!n.ok || n.ctx_device(&dev) != CUDA_SUCCESS || n.pci_bus_id(bus, sizeof bus, dev) != CUDA_SUCCESS ||
      n.by_pci(bus, &handle) != 0)
    return nullptr;
  return handle;
}

}  // namespace

ORCH_EXPORT int orch_inject_ecc(unsigned long long* volatile_uncorrected) {
  *volatile_uncorrected = 0;
  std::lock_guard<std::mutex> lock(g_nvml_mutex);
  Nvml& n = nvml();
  const NvmlDevice handle = current_device(n);
  return handle != nullptr && n.ecc != nullptr && n.ecc(handle, kEccUncorrected, kEccVolatile, volatile_uncorrected) == 0 ? 1 : 0;
}

ORCH_EXPORT int orch_inject_clocks(struct orch_inject_clock* out) {
  *out = {};
  std::lock_guard<std::mutex> lock(g_nvml_mutex);
  Nvml& n = nvml();
  const NvmlDevice handle = current_device(n);
  if (handle == nullptr) return 0;
  unsigned long long& xids = n.xid_counter(handle);  // registers first, so this drain sees its events
  n.drain();
  out->ok = 1;
  out->sm_mhz = out->mem_mhz = out->temp_c = -1;
  out->power_w = -1;
  unsigned v = 0;
  if (n.clock(handle, kClockSm, &v) == 0) out->sm_mhz = static_cast<int>(v);
  if (n.clock(handle, kClockMem, &v) == 0) out->mem_mhz = static_cast<int>(v);
  if (n.temperature != nullptr && n.temperature(handle, kTempGpu, &v) == 0) out->temp_c = static_cast<int>(v);
  if (n.power != nullptr && n.power(handle, &v) == 0) out->power_w = v / 1000.0;
  unsigned long long bits = 0;
  if (n.reasons != nullptr && n.reasons(handle, &bits) == 0) out->reasons = bits;
  out->xid_events = xids;
  return 1;
}

ORCH_EXPORT const char* orch_inject_reason_name(unsigned bit) {
  return bit < sizeof kReasonNames / sizeof kReasonNames[0] ? kReasonNames[bit] : nullptr;
}
