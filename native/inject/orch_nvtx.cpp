// NVTX ranges as step delimiters (orch_nvtx.hpp, orch_inject.h "NVTX step ranges", ranklib/PROTOCOL.md). NVTX v3 is
// header-only: every library of the program that calls NVTX carries its own copy, and each copy
// loads NVTX_INJECTION64_PATH on its first call and calls InitializeInjectionNvtx2 with its own
// function table. So InitializeInjectionNvtx2 fills whichever table it is given, every time.
//
// One step is the outermost push..pop (or start..end) of the range named ORCH_INJECT_STEP_RANGE, in
// the default domain or any other (nvtx3::scoped_range pushes through nvtxDomainRangePushEx),
// as an ASCII message or a string registered through this library:
// the counters are read at its push and at its pop, and the difference is the step. The same name
// nested inside an open step, and every other range, are only kept track of (so that their pops
// do not close the step). Counts are process-wide, as a step's launches may come from any thread.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "orch_nvtx.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define ORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Steps kept per process: the exit report stays well under the 1 MiB orch reads (about 60 bytes a step).
constexpr std::size_t kMaxSteps = 10000;
// Other range names kept for the report (so a misspelt step range shows what the program named).
constexpr std::size_t kMaxOtherNames = 8;
// Registered strings and domain names this library hands out handles for (each its own address).
constexpr std::size_t kMaxInterned = 4096;
constexpr std::size_t kMaxNameChars = 128;

struct Delimiter {
  std::mutex mutex;
  std::string range;  // ORCH_INJECT_STEP_RANGE, read at the first InitializeInjectionNvtx2
  bool open = false;  // a step is open (pushed on `opener`, or started as `open_id`)
  nvtxRangeId_t open_id = 0;
  orch_inject::Counts at_open;
  std::chrono::steady_clock::time_point opened;
  std::vector<orch_inject::Counts> steps;
  std::vector<std::uint64_t> step_ns;  // host time from the step's push to its pop, beside steps
  std::uint64_t dropped = 0;  // steps past kMaxSteps
  std::set<std::string> others;
  std::set<std::string> interned;  // registered strings and domain names: a node's c_str() is the handle
};

Delimiter& delimiter() {
  static Delimiter* d = new Delimiter();  // never destroyed: the exit report reads it in an exit handler
  return *d;
}

std::atomic<bool> g_loaded{false};                 // NVTX called InitializeInjectionNvtx2
std::atomic<nvtxRangeId_t> g_next_id{1};           // nvtxRangeStart's ids: this library is their source

// Per thread and domain (nullptr: the default domain of nvtxRangePush*): for each pushed range not
// yet popped, whether its push opened the step. Each domain has a stack of its own in NVTX.
thread_local std::map<nvtxDomainHandle_t, std::vector<bool>> t_pushed;

// A handle for `s` (a registered string, a domain's name): the address of orch's own copy, so a
// message of type NVTX_MESSAGE_TYPE_REGISTERED reads back as the string; nullptr past kMaxInterned.
const char* intern(const char* s) {
  if (s == nullptr) return nullptr;
  Delimiter& d = delimiter();
  std::lock_guard<std::mutex> lock(d.mutex);
  const auto found = d.interned.find(s);
  if (found != d.interned.end()) return found->c_str();
  if (d.interned.size() >= kMaxInterned) return nullptr;
  return d.interned.insert(s).first->c_str();
}

orch_inject::Counts minus(const orch_inject::Counts& a, const orch_inject::Counts& b) {
  return {a.kernels - b.kernels, a.captured - b.captured, a.graphs - b.graphs, a.memcpy - b.memcpy, a.memset - b.memset, a.syncs - b.syncs};
}

// A range named `name` begins; true when it opens the step.
bool begin(const char* name, nvtxRangeId_t id) {
  Delimiter& d = delimiter();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (name == nullptr || d.range != name) {
    if (name != nullptr && d.others.size() < kMaxOtherNames) d.others.insert(std::string(name).substr(0, kMaxNameChars));
    return false;
  }
  if (d.open) return false;  // nested in (or overlapping) the open step: part of it
  d.open = true;
  d.open_id = id;
  d.at_open = orch_inject::counts_now();
  d.opened = std::chrono::steady_clock::now();
  return true;
}

// The range that opened the step ends.
void close_step() {
  const orch_inject::Counts now = orch_inject::counts_now();
  const auto closed = std::chrono::steady_clock::now();
  Delimiter& d = delimiter();
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!d.open) return;
  d.open = false;
  if (d.steps.size() >= kMaxSteps) {
    ++d.dropped;
    return;
  }
  d.steps.push_back(minus(now, d.at_open));
  d.step_ns.push_back(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(closed - d.opened).count()));
}

// The message of an event's attributes: ASCII, or a string registered through this library
// (its handle is orch's copy, intern); wide strings are not step names.
const char* ascii_message(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return nullptr;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return reinterpret_cast<const char*>(a->message.registered);
  return nullptr;
}

int push(nvtxDomainHandle_t domain, const char* name) {
  std::vector<bool>& stack = t_pushed[domain];
  stack.push_back(begin(name, 0));
  return static_cast<int>(stack.size()) - 1;
}

int pop(nvtxDomainHandle_t domain) {
  std::vector<bool>& stack = t_pushed[domain];
  if (stack.empty()) return -1;  // a pop without a push on this thread: NVTX's error value
  const bool opener = stack.back();
  stack.pop_back();
  if (opener) close_step();
  return static_cast<int>(stack.size());
}

int NVTX_API on_push_a(const char* message) { return push(nullptr, message); }
int NVTX_API on_push_ex(const nvtxEventAttributes_t* attributes) { return push(nullptr, ascii_message(attributes)); }
int NVTX_API on_pop() { return pop(nullptr); }
int NVTX_API on_domain_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) { return push(domain, ascii_message(attributes)); }
int NVTX_API on_domain_pop(nvtxDomainHandle_t domain) { return pop(domain); }

nvtxRangeId_t start(const char* name) {
  const nvtxRangeId_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  (void)begin(name, id);
  return id;
}

nvtxRangeId_t NVTX_API on_start_a(const char* message) { return start(message); }
nvtxRangeId_t NVTX_API on_start_ex(const nvtxEventAttributes_t* attributes) { return start(ascii_message(attributes)); }

nvtxRangeId_t NVTX_API on_domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) { return start(ascii_message(attributes)); }

nvtxStringHandle_t NVTX_API on_register_string_a(nvtxDomainHandle_t, const char* string) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(intern(string)));
}

// Domains by name, so that each has its push/pop stack (NVTX gives the same handle for the same name).
nvtxDomainHandle_t NVTX_API on_domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(intern(name)));
}

void NVTX_API on_end(nvtxRangeId_t id) {
  Delimiter& d = delimiter();
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (!d.open || d.open_id == 0 || d.open_id != id) return;
  }
  close_step();
}

void NVTX_API on_domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { on_end(id); }

template <typename Id, typename Fn>
bool install(NvtxFunctionTable table, unsigned size, Id id, Fn fn) {
  if (table == nullptr || static_cast<unsigned>(id) >= size || table[id] == nullptr) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  return true;
}

std::string json_list(const std::vector<std::uint64_t>& xs) {
  std::string s = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(xs[i]);
  }
  return s + "]";
}

std::string counts_json(const std::vector<orch_inject::Counts>& steps) {
  auto list = [&steps](std::uint64_t orch_inject::Counts::*field) {
    std::vector<std::uint64_t> xs;
    for (const orch_inject::Counts& c : steps) xs.push_back(c.*field);
    return json_list(xs);
  };
  return "{\"kernels\":" + list(&orch_inject::Counts::kernels) + ",\"captured\":" + list(&orch_inject::Counts::captured) +
         ",\"graphs\":" + list(&orch_inject::Counts::graphs) + ",\"memcpy\":" + list(&orch_inject::Counts::memcpy) +
         ",\"memset\":" + list(&orch_inject::Counts::memset) + ",\"syncs\":" + list(&orch_inject::Counts::syncs) + "}";
}

}  // namespace

// NVTX's entry point (nvtxDetail/nvtxInit.h): called by each NVTX copy in the process at its first
// call when NVTX_INJECTION64_PATH names this library. Returns 0 (NVTX unloads nothing it did not
// load and makes its calls no-ops) when no step range is asked for or the table cannot be filled.
ORCH_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* range = std::getenv("ORCH_INJECT_STEP_RANGE");
  if (range == nullptr || *range == '\0' || get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable table = nullptr, table2 = nullptr;
  unsigned size = 0, size2 = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table2, &size2) == 0)
    return 0;
  {
    Delimiter& d = delimiter();
    std::lock_guard<std::mutex> lock(d.mutex);
    if (d.range.empty()) d.range = range;
  }
  const bool ok = install(table, size, NVTX_CBID_CORE_RangePushA, &on_push_a) &&
                  install(table, size, NVTX_CBID_CORE_RangePushEx, &on_push_ex) &&
                  install(table, size, NVTX_CBID_CORE_RangePop, &on_pop) &&
                  install(table, size, NVTX_CBID_CORE_RangeStartA, &on_start_a) &&
                  install(table, size, NVTX_CBID_CORE_RangeStartEx, &on_start_ex) &&
                  install(table, size, NVTX_CBID_CORE_RangeEnd, &on_end) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainRangePushEx, &on_domain_push_ex) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainRangePop, &on_domain_pop) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainRangeStartEx, &on_domain_start_ex) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainRangeEnd, &on_domain_end) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainRegisterStringA, &on_register_string_a) &&
                  install(table2, size2, NVTX_CBID_CORE2_DomainCreateA, &on_domain_create_a);
  if (ok) g_loaded.store(true, std::memory_order_release);
  return ok ? 1 : 0;
}

std::string orch_inject::nvtx_report_fields() {
  const char* range = std::getenv("ORCH_INJECT_STEP_RANGE");
  if (range == nullptr || *range == '\0') return "";
  Delimiter& d = delimiter();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::string others = "[";
  for (const std::string& o : d.others) {
    if (others.size() != 1) others += ',';
    others += '"';
    others += json_escaped(o.c_str());
    others += '"';
  }
  return ",\"step_range\":\"" + json_escaped(range) + "\",\"nvtx\":" + (g_loaded.load(std::memory_order_acquire) ? "1" : "0") +
         ",\"range_steps\":" + std::to_string(d.steps.size()) + ",\"range_dropped\":" + std::to_string(d.dropped) +
         ",\"range_counts\":" + counts_json(d.steps) + ",\"range_ns\":" + json_list(d.step_ns) + ",\"other_ranges\":" + others + "]";
}
