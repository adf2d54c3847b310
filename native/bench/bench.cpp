// graphrt_bench: the numbers of native/BENCHMARKS.md, in one process, arms interleaved (ratios
// within one run, medians, warm-up excluded, device events). Uses the same workloads, launch
// helper, graph slot and step loop as graphrt itself.
//
//   graphrt_bench [--backend cuda|cpu] [--rounds R] [--hidden H] [--decode-arms 16|4]
//                 [--sections chain,decode,trigger,split,serve,train] [--json PATH]
//
// 1. chain: 2000 trivial kernels per step, us per kernel: eager, eager+pdl, graph, graph+pdl.
// 2. decode: 93 layers x 30 kernels, ms per step (median, mean, sem, n) for all 16 arms of
//    graph x pdl x overlap x split_combine, in rotating order, each chunk one full position
//    cycle (max_pos steps) so every arm measures the same work.
// 3. train: L, P and the win of the pin.
// 4. CUPTI (where built): the share of a graph+PDL decode step that is not kernel execution, and
//    the duration of each kernel per launch.
// 5. split: split_combine's worth, eager and graph+pdl, at 2-3 attention lengths.
// 6. serve: per-rep overhead of a resident session for interleaved arms (fresh vs reused graphs).
// A SUMMARY of the headline numbers is printed last.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <chrono>

#include "context.hpp"
#include "graph_slot.hpp"
#include "json.hpp"
#include "session.hpp"
#include "graphrt/backends.hpp"
#include "steps.hpp"
#include "workload.hpp"

#if defined(GRAPHRT_WITH_CUDA)
#include "cuda/cuda_backend.hpp"
#endif
#if defined(GRAPHRT_BENCH_CUPTI)
#include <cupti.h>

#include <map>
#endif

using namespace graphrt;

namespace {

struct Stats {
  double median = 0, mean = 0, sem = 0;
  std::size_t n = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sem = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) / std::sqrt(static_cast<double>(v.size())) : 0;
  return s;
}

// The short table printed last (what one device call must show), filled by the sections.
std::vector<std::string> g_summary;
void summary(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void summary(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_summary.emplace_back(buf);
}

// One arm: its own context, workload and (for graph arms) captured graph.
struct Arm {
  std::string name;
  Request req;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Workload> w;
  std::unique_ptr<GraphSlot> slot;
  CaptureOutcome capture;
  std::vector<double> ms;
  std::vector<std::string> first_hashes;
  std::uint64_t launches = 0;

  GraphSlot* graph() { return slot && slot->live() ? slot.get() : nullptr; }
};

// Where the kernels trigger their PDL dependents (cuda_kernels.cu): CUDA only, graph arms only
// (the wrapper is frozen into the graph; eager arms always use the default, Early).
enum class Trigger { AfterWait, Early, Implicit };  // AfterWait: the backend's default
const char* trigger_name(Trigger t) { return t == Trigger::Early ? "early" : t == Trigger::AfterWait ? "after-wait" : "implicit"; }

std::unique_ptr<Arm> make_arm(Backend& b, const std::string& name, const Request& req, Trigger trigger = Trigger::AfterWait) {
#if defined(GRAPHRT_WITH_CUDA)
  auto* cb = dynamic_cast<cuda::CudaBackend*>(&b);
  if (cb != nullptr)
    cb->set_pdl_trigger(trigger == Trigger::Early       ? cuda::PdlTrigger::Early
                        : trigger == Trigger::AfterWait ? cuda::PdlTrigger::AfterWait
                                                        : cuda::PdlTrigger::Implicit);
#else
  (void)trigger;
#endif
  auto a = std::make_unique<Arm>();
  a->name = name;
  a->req = req;
  a->ctx = std::make_unique<Context>(b);
  a->ctx->opts.pdl = req.toggles.pdl && b.info().features.pdl;
  a->ctx->overlap = req.toggles.overlap;
  a->w = make_workload(b, req);
  if (req.toggles.graph) {
    a->slot = std::make_unique<GraphSlot>(b);
    a->slot->prepare(*a->ctx, *a->w, req.seed, capture_key(req));
    a->capture = a->slot->capture(*a->ctx, *a->w);
    if (!a->capture.ok) std::fprintf(stderr, "arm %s: capture failed: %s\n", name.c_str(), a->capture.reason.c_str());
  }
  a->w->reset(req.seed);
#if defined(GRAPHRT_WITH_CUDA)
  if (cb != nullptr) cb->set_pdl_trigger(cuda::PdlTrigger::AfterWait);
#endif
  return a;
}

// Rounds of chunks, arm order rotating each round; round 0 is warm-up and not recorded, except
// that its hashes (every arm from the same reset state, same step count) are kept to compare.
// A graph arm's chunk starts with the settle (steps.hpp), as a graph rep of `graphrt serve` does:
// without it a graph arm's speed depended on the arm before it in the rotation.
void interleave(std::vector<std::unique_ptr<Arm>>& arms, int rounds, std::int64_t warmup, std::int64_t steps) {
  const std::size_t n = arms.size();
  for (int r = 0; r <= rounds; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      Arm& a = *arms[(r % 2 == 0) ? (i + r) % n : (n - 1 - i + r) % n];
      if (a.graph() != nullptr) settle_launch_state(*a.ctx, *a.w, a.req.seed);
      const StepRun run = run_steps(*a.ctx, *a.w, a.graph(), warmup, steps);
      a.launches = run.launches;
      if (r == 0) a.first_hashes = run.hashes;
      else a.ms.insert(a.ms.end(), run.step_ms.begin(), run.step_ms.end());
    }
  }
}

std::string clocks_text(Backend& b) {
  const auto c = b.read_clocks();
  if (!c) return "unavailable";
  std::ostringstream o;
  o << "sm " << c->sm_mhz << " MHz, mem " << c->mem_mhz << " MHz, " << c->temp_c << " C, " << c->power_w
    << " W, reasons [";
  for (std::size_t i = 0; i < c->reasons.size(); ++i) o << (i ? "," : "") << c->reasons[i];
  o << "]";
  return o.str();
}

#if defined(GRAPHRT_BENCH_CUPTI)
// Kernel activity records (start, end in ns), collected by CUPTI's buffer callbacks.
struct KernelRecord {
  std::uint64_t start, end;
  const char* name;
  bool operator<(const KernelRecord& o) const { return start < o.start; }
};
std::vector<KernelRecord> g_kernels;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      g_kernels.push_back(KernelRecord{k->start, k->end, k->name});
    }
  }
  std::free(buffer);
}

#define CUPTI_OK(expr)                                                            \
  do {                                                                            \
    const CUptiResult r_ = (expr);                                                \
    if (r_ != CUPTI_SUCCESS) {                                                    \
      const char* s_ = nullptr;                                                   \
      cuptiGetResultString(r_, &s_);                                              \
      std::fprintf(stderr, "%s failed: %s\n", #expr, s_ ? s_ : "?");              \
      return false;                                                               \
    }                                                                             \
  } while (0)

// "MatvecKernel" out of a mangled wrapper name (..._kernelIN7graphrt7kernels12MatvecKernelE...).
std::string short_name(const std::string& mangled) {
  const auto at = mangled.find("7kernels");
  if (at == std::string::npos) return mangled.substr(0, 40);
  std::size_t i = at + 8, len = 0;
  while (i < mangled.size() && mangled[i] >= '0' && mangled[i] <= '9') len = len * 10 + (mangled[i++] - '0');
  return mangled.substr(i, len);
}

struct KernelShare {
  Stats busy_ms;        // per step: union of kernel intervals
  Stats span_ms;        // per step: first kernel start to last kernel end
  Stats event_ms;       // per step: device events around the step (as the rep measures it)
  Stats sum_ms;         // per step: sum of kernel durations
  std::size_t kernels_per_step = 0;
  std::map<std::string, std::pair<double, std::size_t>> by_name;  // total us and count, all steps
};

// Steps of `arm` under CUPTI; records grouped per step by count (steps are separated by a sync).
bool cupti_measure(Arm& arm, int steps, KernelShare& out) {
  out.by_name.clear();
  g_kernels.clear();
  CUPTI_OK(cuptiActivityFlushAll(1));
  g_kernels.clear();
  const StepRun run = run_steps(*arm.ctx, *arm.w, arm.graph(), 0, steps);
  CUPTI_OK(cuptiActivityFlushAll(1));
  auto recs = g_kernels;
  std::sort(recs.begin(), recs.end());
  const std::size_t per = run.launches;
  if (per == 0 || recs.size() != per * static_cast<std::size_t>(steps)) {
    std::fprintf(stderr, "cupti: %zu kernel records for %d steps of %zu kernels\n", recs.size(), steps, per);
    return false;
  }
  std::vector<double> busy, span, sum;
  for (int s = 0; s < steps; ++s) {
    const auto* r = recs.data() + s * per;
    std::uint64_t u = 0, cur_s = r[0].start, cur_e = r[0].end, total = 0, last = 0;
    for (std::size_t i = 0; i < per; ++i) {
      total += r[i].end - r[i].start;
      last = std::max(last, r[i].end);
      auto& n = out.by_name[r[i].name != nullptr ? short_name(r[i].name) : "?"];
      n.first += (r[i].end - r[i].start) / 1e3;
      n.second += 1;
      if (r[i].start > cur_e) {
        u += cur_e - cur_s;
        cur_s = r[i].start;
        cur_e = r[i].end;
      } else {
        cur_e = std::max(cur_e, r[i].end);
      }
    }
    u += cur_e - cur_s;
    busy.push_back(u / 1e6);
    span.push_back((last - r[0].start) / 1e6);
    sum.push_back(total / 1e6);
  }
  out.busy_ms = stats_of(busy);
  out.span_ms = stats_of(span);
  out.sum_ms = stats_of(sum);
  out.event_ms = stats_of(run.step_ms);
  out.kernels_per_step = per;
  return true;
}
#endif

void chain_section(Backend& b, bool small, int rounds, std::ostringstream& js) {
  const std::uint32_t kernels = small ? 200 : 2000;
  std::vector<std::unique_ptr<Arm>> arms;
  constexpr int kPerN = 6;
  for (const std::uint32_t n : {256u, 64u}) {
    for (int m = 0; m < kPerN; ++m) {
      Request r;
      r.workload = "chain";
      r.params.kernels = kernels;
      r.params.param_size = n;
      r.toggles.pdl = m == 1 || m >= 3;
      r.toggles.graph = m >= 2;
      const char* names[] = {"eager", "eager+pdl", "graph", "graph+pdl", "graph+pdl/early", "graph+pdl/implicit"};
      const Trigger t = m == 4 ? Trigger::Early : m == 5 ? Trigger::Implicit : Trigger::AfterWait;
      arms.push_back(make_arm(b, std::string(names[m]) + " n" + std::to_string(n), r, t));
    }
  }
  interleave(arms, small ? 2 : 2 * rounds, 1, small ? 2 : 20);
  std::printf("\nchain: %u trivial kernels per step on n floats (n/64 blocks of 64 threads), us per kernel = median "
              "step / %u\n(graph+pdl: trigger after cudaGridDependencySynchronize() (default); /early: trigger before it; /implicit: no trigger)\n",
              kernels, kernels);
  std::printf("%-26s %10s %10s %10s %6s %10s\n", "arm", "us/kernel", "ms/step", "sem_ms", "n", "vs eager");
  js << "\"chain\":{\"kernels\":" << kernels << ",\"arms\":[";
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const Stats s = stats_of(arms[i]->ms);
    const double base = stats_of(arms[i - i % kPerN]->ms).median;
    std::printf("%-26s %10.3f %10.4f %10.5f %6zu %9.2fx\n", arms[i]->name.c_str(), 1000.0 * s.median / kernels,
                s.median, s.sem, s.n, base / s.median);
    js << (i ? "," : "") << "{\"arm\":\"" << arms[i]->name << "\",\"us_per_kernel\":" << 1000.0 * s.median / kernels
       << ",\"median_ms\":" << s.median << ",\"sem_ms\":" << s.sem << ",\"n\":" << s.n << "}";
  }
  bool same = true;
  for (std::size_t i = 0; i < arms.size(); ++i) same = same && arms[i]->first_hashes == arms[i - i % kPerN]->first_hashes;
  std::printf("chain outputs identical across the arms of each n: %s\n", same ? "yes" : "NO");
  js << "],\"identical\":" << (same ? "true" : "false") << "},";
}

#if defined(GRAPHRT_BENCH_CUPTI)
// The share of a graph+PDL decode step that is not kernel execution. Kernel execution is the sum
// of kernel durations of the same graph without PDL (with PDL a kernel starts early and its
// recorded duration includes its wait in cudaGridDependencySynchronize). Fresh graphs are
// captured after tracing is on.
void cupti_section(Backend& b, const Request& dreq, std::ostringstream& js) {
  auto fail = [&] { std::printf("\nCUPTI measurement failed (see stderr)\n"); };
  auto start = [&]() -> bool {
    CUPTI_OK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    return true;
  };
  Request r = dreq;
  r.toggles.graph = true;
  Request rp = r;
  rp.toggles.pdl = true;
  // The same two graphs untraced first (tracing itself lengthens a step), interleaved.
  std::vector<std::unique_ptr<Arm>> untraced;
  untraced.push_back(make_arm(b, "graph", r));
  untraced.push_back(make_arm(b, "graph+pdl", rp));
  interleave(untraced, 3, 2, dreq.params.max_pos);
  const double untraced_plain = stats_of(untraced[0]->ms).median;
  const double untraced_pdl = stats_of(untraced[1]->ms).median;
  untraced.clear();
  if (!start()) return fail();
  KernelShare plain, pdl;
  auto a_plain = make_arm(b, "graph", r);
  auto a_pdl = make_arm(b, "graph+pdl", rp);
  const bool ok = cupti_measure(*a_plain, 1, plain) && cupti_measure(*a_pdl, 1, pdl) &&  // warm-up
                  cupti_measure(*a_plain, 16, plain) && cupti_measure(*a_pdl, 16, pdl);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityFlushAll(1);
  if (!ok) return fail();
  const double exec = plain.sum_ms.median;
  std::printf("\nCUPTI kernel activity, decode hidden %u graph replays (16 steps each, %zu kernels per step; "
              "medians per step)\n",
              dreq.params.hidden, pdl.kernels_per_step);
  std::printf("%-10s %10s %10s %10s %10s %12s\n", "arm", "event_ms", "span_ms", "busy_ms", "sum_ms", "no-kernel%");
  for (const auto* k : {&plain, &pdl})
    std::printf("%-10s %10.4f %10.4f %10.4f %10.4f %11.2f%%\n", k == &plain ? "graph" : "graph+pdl", k->event_ms.median,
                k->span_ms.median, k->busy_ms.median, k->sum_ms.median,
                100.0 * (1 - k->busy_ms.median / k->event_ms.median));
  std::printf("(busy: union of kernel intervals; no-kernel%%: time of the step with no kernel resident)\n");
  const double share = 1 - exec / pdl.event_ms.median;
  const double share_untraced = 1 - exec / untraced_pdl;
  std::printf("untraced step (events, same graphs, 3 rounds interleaved): graph %.4f ms, graph+pdl %.4f ms; tracing "
              "lengthens them %.2fx / %.2fx\n",
              untraced_plain, untraced_pdl, plain.event_ms.median / untraced_plain, pdl.event_ms.median / untraced_pdl);
  std::printf("NON-KERNEL SHARE of a graph+pdl step = 1 - kernel execution %.4f ms (sum of kernel durations, graph "
              "without pdl) / graph+pdl step: traced %.4f ms -> %.2f%%; untraced %.4f ms -> %.2f%%\n",
              exec, pdl.event_ms.median, 100.0 * share, untraced_pdl, 100.0 * share_untraced);
  std::printf("kernel durations by kernel, graph without pdl (us per launch, launches per step):\n");
  for (const auto& [name, v] : plain.by_name) {
    std::printf("  %-20s %8.3f us x %4zu = %7.3f ms\n", name.c_str(), v.first / v.second, v.second / 16,
                v.first / 16 / 1000.0);
    if (name == "MatvecKernel" || name == "AttnScoresKernel" || name == "AttnCombineKernel")
      summary("%-18s per launch, hidden %u (CUPTI, graph): %8.3f us", name.c_str(), dreq.params.hidden,
              v.first / v.second);
  }
  js << ",\"cupti_h" << dreq.params.hidden << "\":{\"kernels_per_step\":" << pdl.kernels_per_step
     << ",\"graph\":{\"event_ms\":" << plain.event_ms.median << ",\"busy_ms\":" << plain.busy_ms.median
     << ",\"sum_ms\":" << plain.sum_ms.median << ",\"span_ms\":" << plain.span_ms.median
     << "},\"graph_pdl\":{\"event_ms\":" << pdl.event_ms.median << ",\"busy_ms\":" << pdl.busy_ms.median
     << ",\"sum_ms\":" << pdl.sum_ms.median << ",\"span_ms\":" << pdl.span_ms.median
     << "},\"untraced_graph_ms\":" << untraced_plain << ",\"untraced_graph_pdl_ms\":" << untraced_pdl
     << ",\"non_kernel_share_traced\":" << share << ",\"non_kernel_share_untraced\":" << share_untraced << "}";
}
#endif

// `arms`: 16 (graph x pdl x overlap x split_combine) or 4 (graph x pdl).
void decode_section(Backend& b, bool small, int rounds, std::uint32_t hidden, int arms, std::ostringstream& js) {
  std::vector<std::unique_ptr<Arm>> decode;
  Request dreq;
  dreq.workload = "decode";
  dreq.params.layers = small ? 4 : 93;
  dreq.params.kernels_per_layer = 30;
  dreq.params.hidden = hidden;
  dreq.params.max_pos = small ? 8 : 64;
  for (int m = 0; m < arms; ++m) {
    Request r = dreq;
    r.toggles.graph = m & 1;
    r.toggles.pdl = m & 2;
    r.toggles.overlap = m & 4;
    r.toggles.split_combine = m & 8;
    std::string name = std::string(r.toggles.graph ? "graph" : "eager") + (r.toggles.pdl ? "+pdl" : "") +
                       (r.toggles.overlap ? "+overlap" : "") + (r.toggles.split_combine ? "+split" : "");
    decode.push_back(make_arm(b, name, r));
  }
  interleave(decode, small ? 1 : rounds, 2, dreq.params.max_pos);
  std::printf("\ndecode: %u layers x %u kernels, hidden %u, max_pos %u; ms per step, %d rounds interleaved, "
              "%u steps (one position cycle) per chunk\n",
              dreq.params.layers, dreq.params.kernels_per_layer, dreq.params.hidden, dreq.params.max_pos,
              small ? 1 : rounds, dreq.params.max_pos);
  std::printf("%-26s %9s %9s %9s %9s %5s %6s %8s %8s\n", "arm", "median", "mean", "sem", "sem/eag", "n", "nodes",
              "graphX", "pdl%");
  js << "\"decode_h" << hidden << "\":{\"layers\":" << dreq.params.layers
     << ",\"kernels_per_layer\":" << dreq.params.kernels_per_layer << ",\"hidden\":" << dreq.params.hidden
     << ",\"max_pos\":" << dreq.params.max_pos << ",\"arms\":[";
  bool same = true;
  for (int m = 0; m < arms; ++m) {
    Arm& a = *decode[m];
    const Stats s = stats_of(a.ms);
    const Stats eager = stats_of(decode[m & ~1]->ms);   // same toggles, graph off
    const Stats no_pdl = stats_of(decode[m & ~2]->ms);  // same toggles, pdl off
    const double graph_x = (m & 1) ? eager.median / s.median : 0;
    const double pdl_gain = (m & 2) ? 100.0 * (no_pdl.median - s.median) / no_pdl.median : 0;
    std::printf("%-26s %9.4f %9.4f %9.5f %9.4f %5zu %6s %7.3fx %7.2f%%\n", a.name.c_str(), s.median, s.mean, s.sem,
                s.sem / eager.sem, s.n, (m & 1) ? std::to_string(a.capture.nodes).c_str() : "-", graph_x, pdl_gain);
    js << (m ? "," : "") << "{\"arm\":\"" << a.name << "\",\"median_ms\":" << s.median << ",\"mean_ms\":" << s.mean
       << ",\"sem_ms\":" << s.sem << ",\"n\":" << s.n << ",\"launches\":" << a.launches
       << ",\"capture_ms\":" << a.capture.capture_ms << ",\"instantiate_ms\":" << a.capture.instantiate_ms << "}";
    same = same && a.first_hashes == decode[0]->first_hashes;  // same steps from the same state in round 0
    if (m & 1)
      summary("decode %ux%u h%-4u %-12s eager/graph %8.3f / %8.3f ms = %.3fx", dreq.params.layers,
              dreq.params.kernels_per_layer, hidden, a.name.c_str(), eager.median, s.median, graph_x);
  }
  std::printf("(graphX: eager median / graph median at the same pdl/overlap/split; pdl%%: gain over the same arm "
              "without pdl; sem/eag: sem over the same toggles' eager sem)\n");
  std::printf("decode outputs identical across the %d arms: %s\n", arms, same ? "yes" : "NO");
  summary("decode h%u outputs identical across the %d arms: %s", hidden, arms, same ? "yes" : "NO");
  js << "],\"identical\":" << (same ? "true" : "false") << "}";
  decode.clear();  // free the arms before the CUPTI graphs
#if defined(GRAPHRT_BENCH_CUPTI)
  if (!small) cupti_section(b, dreq, js);
#endif
  js << ",";
}

// Decode graph+pdl with the three trigger placements, interleaved (overlap and split off).
void trigger_section(Backend& b, int rounds, const std::vector<std::uint32_t>& hiddens, std::ostringstream& js) {
  std::printf("\ndecode graph+pdl by PDL trigger placement (93 x 30, max_pos 64, %d rounds interleaved)\n", rounds);
  std::printf("%-8s %-12s %9s %9s %5s %14s\n", "hidden", "trigger", "median", "sem", "n", "vs after-wait");
  js << "\"pdl_trigger\":[";
  bool first = true;
  for (const std::uint32_t h : hiddens) {
    std::vector<std::unique_ptr<Arm>> arms;
    for (const Trigger t : {Trigger::AfterWait, Trigger::Early, Trigger::Implicit}) {
      Request r;
      r.workload = "decode";
      r.params.layers = 93;
      r.params.kernels_per_layer = 30;
      r.params.hidden = h;
      r.params.max_pos = 64;
      r.toggles.graph = true;
      r.toggles.pdl = true;
      arms.push_back(make_arm(b, trigger_name(t), r, t));
    }
    interleave(arms, rounds, 2, 64);
    const double base = stats_of(arms[0]->ms).median;
    for (const auto& a : arms) {
      const Stats s = stats_of(a->ms);
      std::printf("%-8u %-12s %9.4f %9.5f %5zu %13.3fx\n", h, a->name.c_str(), s.median, s.sem, s.n, base / s.median);
      js << (first ? "" : ",") << "{\"hidden\":" << h << ",\"trigger\":\"" << a->name << "\",\"median_ms\":" << s.median
         << ",\"sem_ms\":" << s.sem << ",\"n\":" << s.n << ",\"identical_to_after_wait\":"
         << (a->first_hashes == arms[0]->first_hashes ? "true" : "false") << "}";
      first = false;
    }
  }
  js << "],";
}


// split_combine's worth: the attention combine as one kernel (one thread per output, a loop over
// every position) or fissioned (a thread per chunk of 16 positions and output, then a merge):
// one more launch per layer for more blocks in flight. Decode `layers` x 12 at hidden 256, at
// 2-3 attention lengths (max_pos; a chunk is one full position cycle, so the mean length is
// max_pos / 2), eager and graph+pdl, interleaved. worth = unsplit median / split median.
void split_section(Backend& b, bool small, int rounds, std::ostringstream& js) {
  const std::vector<std::uint32_t> sizes = small ? std::vector<std::uint32_t>{16, 64} : std::vector<std::uint32_t>{64, 512, 2048};
  const std::uint32_t layers = small ? 2 : 8;
  std::printf("\nsplit_combine: decode %u layers x 12, hidden 256, ms per step over one position cycle, %d rounds "
              "interleaved; worth = unsplit / split (> 1: the split wins)\n",
              layers, small ? 1 : rounds);
  std::printf("%-8s %-10s %10s %10s %9s %10s %10s %9s %6s\n", "max_pos", "mode", "unsplit", "split", "worth", "sem_u",
              "sem_s", "n", "same");
  js << "\"split\":[";
  bool first = true;
  for (const std::uint32_t mp : sizes) {
    std::vector<std::unique_ptr<Arm>> arms;
    for (int m = 0; m < 4; ++m) {
      Request r;
      r.workload = "decode";
      r.params.layers = layers;
      r.params.kernels_per_layer = 12;
      r.params.hidden = small ? 64 : 256;
      r.params.max_pos = mp;
      r.toggles.split_combine = m & 1;
      r.toggles.graph = r.toggles.pdl = m & 2;
      arms.push_back(make_arm(b, std::string(m & 2 ? "graph+pdl" : "eager") + (m & 1 ? "+split" : ""), r));
    }
    interleave(arms, small ? 1 : rounds, 2, mp);
    for (int mode = 0; mode < 2; ++mode) {
      const Stats u = stats_of(arms[2 * mode]->ms), sp = stats_of(arms[2 * mode + 1]->ms);
      const bool same = arms[2 * mode]->first_hashes == arms[2 * mode + 1]->first_hashes;
      const char* name = mode ? "graph+pdl" : "eager";
      std::printf("%-8u %-10s %10.4f %10.4f %8.3fx %10.5f %10.5f %9zu %6s\n", mp, name, u.median, sp.median,
                  u.median / sp.median, u.sem, sp.sem, sp.n, same ? "yes" : "NO");
      summary("split_combine max_pos %-5u %-10s unsplit/split %8.4f / %8.4f ms = %.3fx (identical: %s)", mp, name,
              u.median, sp.median, u.median / sp.median, same ? "yes" : "NO");
      js << (first ? "" : ",") << "{\"max_pos\":" << mp << ",\"mode\":\"" << name << "\",\"unsplit_ms\":" << u.median
         << ",\"split_ms\":" << sp.median << ",\"identical\":" << (same ? "true" : "false") << "}";
      first = false;
    }
  }
  js << "],";
}

// Per-rep overhead of a resident `graphrt serve` process: the same path as serve (a JSON request
// line parsed, Session::handle, the answer lines built), arms interleaved A B B A ... as a block
// sends them. Overhead of a rep = its wall time - (warmup + steps) x its mean measured step: what
// the card is leased for but spends on neither warm-up nor measured steps (reset, workload
// making, prepare, capture, instantiate, per-step hashing). By the rep's `graph` field (fresh:
// captured for this rep; reused: a graph kept from an earlier rep of the arm; absent: eager).
// max_cached 1 keeps one workload at a time, as graphrt did before the cache: every key change
// makes the workload and captures again.
void serve_section(const std::string& backend, bool small, std::size_t max_cached, std::ostringstream& js) {
  const std::uint32_t layers = 93, hidden = 256;
  const int warmup = small ? 1 : 2, steps = small ? 2 : 8;
  const char* toggles[] = {"{}", "{\"graph\":true}", "{\"graph\":true,\"pdl\":true}",
                           "{\"graph\":true,\"overlap\":true}"};
  const char* names[] = {"eager", "graph", "graph+pdl", "graph+overlap"};
  // A B B A order over four arms, three times: each arm's first rep is its first capture.
  const int order[] = {0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3};
  SessionOptions options;
  options.max_cached = max_cached;
  Session session(make_backend(backend), {}, options);
  std::map<std::string, std::vector<double>> by_kind;
  std::printf("\nserve: per-rep overhead, decode %u x 30 hidden %u, warmup %d + steps %d, arms interleaved "
              "A B B A (wall ms of the rep - (warmup+steps) x mean step), session cache of %zu\n",
              layers, hidden, warmup, steps, max_cached);
  std::printf("%-4s %-14s %-7s %10s %10s %10s\n", "rep", "arm", "graph", "wall_ms", "steps_ms", "overhead");
  int rep = 0;
  for (const int a : order) {
    std::ostringstream line;
    line << "{\"id\":\"" << rep << "\",\"arm\":\"" << names[a] << "\",\"workload\":\"decode\",\"params\":{"
         << "\"layers\":" << layers << ",\"kernels_per_layer\":30,\"hidden\":" << hidden
         << ",\"max_pos\":64},\"toggles\":" << toggles[a] << ",\"warmup\":" << warmup
         << ",\"steps\":" << steps << "}";
    std::string rep_line;
    const auto t0 = std::chrono::steady_clock::now();
    session.handle(request_from_json(json::parse(line.str())), [&](const std::string& l) {
      if (l.find("\"type\":\"rep\"") != std::string::npos) rep_line = l;
    });
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const json::Value v = json::parse(rep_line);
    double sum = 0;
    for (const auto& x : v.find("step_ms")->items) sum += x.number;
    const double step_total = sum / steps * (warmup + steps);
    const json::Value* g = v.find("graph");
    const std::string kind = v.find("mode")->text == "eager" ? "eager"
                             : g != nullptr && g->kind == json::Value::Kind::String ? g->text
                                                                                     : "graph(?)";
    std::printf("%-4d %-14s %-7s %10.2f %10.2f %10.2f\n", rep, names[a], kind.c_str(), wall, step_total, wall - step_total);
    by_kind[kind].push_back(wall - step_total);
    ++rep;
  }
  js << "\"serve_overhead" << (max_cached == 1 ? "_one_at_a_time" : "") << "\":{";
  bool first = true;
  for (const auto& [kind, v] : by_kind) {
    const Stats s = stats_of(v);
    std::printf("SERVE OVERHEAD %-8s median %8.2f ms over %zu reps\n", kind.c_str(), s.median, s.n);
    summary("serve per-rep overhead %-22s %-7s median %8.2f ms (%zu reps)",
            max_cached == 1 ? "(cache of 1: as before)" : "(graph cache)", kind.c_str(), s.median, s.n);
    js << (first ? "" : ",") << "\"" << kind << "\":{\"median_ms\":" << s.median << ",\"n\":" << s.n << "}";
    first = false;
  }
  js << "},";
}

void train_section(Backend& b, std::ostringstream& js) {
  js << "\"train\":[";
  std::printf("\ntrain: 8 parameters x 256 floats, out-of-place SGD (win = P < L - 1, the pin's price)\n%-8s %6s %6s %6s\n",
              "pin", "L", "P", "win");
  for (const bool pin : {false, true}) {
    Request r;
    r.workload = "train";
    r.toggles.pin = pin;
    Context ctx(b);
    auto w = make_workload(b, r);
    w->reset(r.seed);
    ctx.begin_step();
    w->run_step(ctx);
    b.synchronize();
    const TrainReport tr = *w->train_report();
    const bool win = tr.pin_copies + 1 < tr.launches;
    std::printf("%-8s %6llu %6llu %6s\n", pin ? "on" : "off", static_cast<unsigned long long>(tr.launches),
                static_cast<unsigned long long>(tr.pin_copies), pin ? (win ? "yes" : "no") : "-");
    js << (pin ? "," : "") << "{\"pin\":" << (pin ? "true" : "false") << ",\"L\":" << tr.launches
       << ",\"P\":" << tr.pin_copies << ",\"win\":" << (win ? "true" : "false") << "}";
  }
  js << "]";
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cuda", json_path, sections = "chain,decode,trigger,train";
  int rounds = 5;
  int decode_arms = 16;
  std::vector<std::uint32_t> hiddens{256, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--backend") backend = argv[i + 1];
    else if (f == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (f == "--hidden") hiddens = {static_cast<std::uint32_t>(std::atoi(argv[i + 1]))};
    else if (f == "--json") json_path = argv[i + 1];
    else if (f == "--sections") sections = argv[i + 1];
    else if (f == "--decode-arms") decode_arms = std::atoi(argv[i + 1]) == 4 ? 4 : 16;
    else {
      std::fprintf(stderr, "unknown flag %s\n", f.c_str());
      return 2;
    }
  }
  const bool small = backend == "cpu";  // a smoke run of the same code on the CPU backend
  auto b = make_backend(backend);
  const DeviceInfo info = b->info();
  std::printf("device: %s, sm %s, %d SMs, driver %s\n", info.device.c_str(), info.sm.value_or("-").c_str(), info.sms,
              info.driver.c_str());
  std::printf("clocks at start: %s\n", clocks_text(*b).c_str());
  std::ostringstream js;
  js << "{";
  auto wants = [&](const char* section) { return sections.find(section) != std::string::npos; };
  if (wants("chain")) chain_section(*b, small, rounds, js);
  if (wants("decode"))
    for (const std::uint32_t h : hiddens) decode_section(*b, small, rounds, small ? 64 : h, decode_arms, js);
  if (wants("trigger") && !small) trigger_section(*b, rounds, hiddens, js);
  if (wants("split")) split_section(*b, small, rounds, js);
  if (wants("serve")) {
    serve_section(backend, small, 1, js);
    serve_section(backend, small, SessionOptions{}.max_cached, js);
  }
  if (wants("train")) train_section(*b, js);
  std::printf("\nclocks at end: %s\n", clocks_text(*b).c_str());
  std::printf("\nSUMMARY (%s)\n", info.device.c_str());
  for (const auto& l : g_summary) std::printf("  %s\n", l.c_str());
  js << "}";
  if (!json_path.empty()) std::ofstream(json_path) << js.str() << "\n";
  return 0;
}
