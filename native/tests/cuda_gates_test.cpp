// The gates on the CUDA backend (those native/BENCHMARKS.md reports), through Session like a client:
// identity over capture + 7 replays for all 16 graph x pdl x overlap x split_combine combinations
// of decode (node count = eager launch log); freeze_pointer first fails at replay 2; train
// unpinned diverges, pinned is bit-identical; lazy_init's capture failure falls back to eager with
// the same hashes; the probes pass; a rep carries clocks at start and end.
#include "cuda_harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

Request decode_cuda() {
  Request r = decode_request();
  r.params.layers = 4;
  r.params.kernels_per_layer = 30;
  r.params.hidden = 256;
  r.params.max_pos = 64;
  return r;
}

}  // namespace

int main() {
  skip_without_gpu("cuda_gates_test");
#if defined(GRAPHRT_WITH_CUDA)
  Session s = cuda_session();
  CHECK_EQ(s.info().backend, std::string("cuda"));
  CHECK(s.info().features.pdl);  // the H200 (sm_90) has programmatic dependent launch

  std::vector<std::string> first_hashes;
  for (int mask = 0; mask < 16; ++mask) {
    Request r = decode_cuda();
    r.op = Op::Identity;
    r.replays = 7;
    r.toggles.graph = mask & 1;
    r.toggles.pdl = mask & 2;
    r.toggles.overlap = mask & 4;
    r.toggles.split_combine = mask & 8;
    const auto lines = ask(s, r);
    const json::Value gate = of_type(lines, "gate");
    const json::Value cap = of_type(lines, "capture");
    std::printf("identity graph=%d pdl=%d overlap=%d split=%d: pass=%d nodes=%.0f launches=%.0f capture_ms=%.2f\n",
                mask & 1, (mask >> 1) & 1, (mask >> 2) & 1, (mask >> 3) & 1, boolean(gate, "pass"),
                number(gate, "nodes"), number(gate, "launches_per_step"), number(cap, "capture_ms"));
    CHECK(boolean(cap, "ok"));
    CHECK(boolean(gate, "pass"));
    CHECK(is_null(gate, "first_bad_replay"));
    const auto eager = strings(gate, "eager_hashes");
    CHECK_EQ(eager.size(), std::size_t{7});
    CHECK(eager == strings(gate, "graph_hashes"));
    CHECK(eager.size() == 7 && eager[0] != eager[1] && eager[1] != eager[2]);  // the position moves
    const double launches = 3 + 4 * (30 + (r.toggles.split_combine ? 1 : 0));
    CHECK_EQ(number(gate, "nodes"), launches);
    CHECK_EQ(number(gate, "launches_per_step"), launches);
    // Every layout computes the same numbers: pdl, overlap and split change no bit.
    if (first_hashes.empty()) first_hashes = eager;
    CHECK(eager == first_hashes);
  }

  {  // the planted bug: a host-computed KV row address, frozen by capture
    Request r = decode_cuda();
    r.op = Op::Identity;
    r.replays = 7;
    r.toggles.freeze_pointer = true;
    r.toggles.pdl = true;
    const json::Value gate = of_type(ask(s, r), "gate");
    std::printf("freeze_pointer: pass=%d first_bad_replay=%.0f\n", boolean(gate, "pass"),
                number(gate, "first_bad_replay"));
    CHECK(!boolean(gate, "pass"));
    CHECK_EQ(number(gate, "first_bad_replay"), 2.0);
  }

  for (const bool pin : {false, true}) {  // train: the out-of-place optimizer hazard and the pin
    Request r;
    r.workload = "train";
    r.op = Op::Identity;
    r.replays = 7;
    r.toggles.pin = pin;
    r.toggles.pdl = true;
    const json::Value gate = of_type(ask(s, r), "gate");
    std::printf("train pin=%d: pass=%d first_bad_replay=%.0f\n", pin, boolean(gate, "pass"),
                number(gate, "first_bad_replay"));
    CHECK_EQ(boolean(gate, "pass"), pin);
    if (!pin) CHECK_EQ(number(gate, "first_bad_replay"), 2.0);
  }

  {  // lazy_init: the capture fails (cudaMalloc in a global-mode capture), the rep runs eagerly
    Request plain = decode_cuda();
    plain.warmup = 0;
    plain.steps = 4;
    const json::Value eager_rep = of_type(ask(s, plain), "rep");
    Request r = plain;
    r.toggles.graph = true;
    r.toggles.lazy_init = true;
    const auto lines = ask(s, r);
    const json::Value cap = of_type(lines, "capture");
    const json::Value rep = of_type(lines, "rep");
    const auto* reason = cap.find("reason");
    std::printf("lazy_init: capture ok=%d reason=%s mode=%s\n", boolean(cap, "ok"),
                reason ? reason->text.c_str() : "-", rep.find("mode") ? rep.find("mode")->text.c_str() : "-");
    CHECK(!boolean(cap, "ok"));
    CHECK(cap.find("fallback") && cap.find("fallback")->text == "eager");
    CHECK(reason && reason->text.find("cudaMalloc") != std::string::npos);
    CHECK(rep.find("mode") && rep.find("mode")->text == "eager");
    CHECK(strings(rep, "hashes") == strings(eager_rep, "hashes"));
    // The failed capture left no error behind: a graph rep right after replays (the graph the
    // identity gate of these toggles captured, kept by the session: `graph` "reused") and matches.
    Request g = plain;
    g.toggles.graph = true;
    const auto glines = ask(s, g);
    const json::Value grep = of_type(glines, "rep");
    CHECK(grep.find("mode") && grep.find("mode")->text == "graph");
    CHECK(grep.find("graph") && grep.find("graph")->text == "reused");
    CHECK(strings(grep, "hashes") == strings(eager_rep, "hashes"));
    Request gi = g;  // and a fresh capture (the gate captures afresh) succeeds too
    gi.op = Op::Identity;
    const auto ilines = ask(s, gi);
    CHECK(boolean(of_type(ilines, "capture"), "ok"));
    CHECK(boolean(of_type(ilines, "gate"), "pass"));
    const json::Value clocks = grep.find("clocks") ? *grep.find("clocks") : json::Value{};
    CHECK(clocks.find("start") && clocks.find("end"));  // NVML read at both ends of the rep
    CHECK(clocks.find("start") && number(*clocks.find("start"), "sm_mhz") > 0);
  }

  {  // the probes (launch counter, unpinned diverges, recapture refusals, pinned exact, dispatch)
    Request r;
    r.op = Op::Probe;
    r.workload = "probe";
    for (const auto& l : ask(s, r)) {
      std::printf("probe %s: pass=%d\n", l.find("name") ? l.find("name")->text.c_str() : "?", boolean(l, "pass"));
      CHECK(boolean(l, "pass"));
    }
  }
#endif
  return finish("cuda_gates_test");
}
