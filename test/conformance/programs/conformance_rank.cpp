// The conformance suite's program for orch_rank.h (test/conformance/rank-protocol.test.ts): the
// twin of conformance_rank.py, the same state, steps and outputs (see there).
#include <cstdlib>
#include <stdexcept>

#include "orch_rank.h"

struct Conformance : orch_rank::Program {
  double state[8] = {};
  double exchanged = 0;
  std::string step_key;  // ORCH_PARAMS step_exchange: the first step() exchanges under it
  bool step_tried = false;  // that exchange was made (or raised)
  double step_exchanged = 0;
  std::string name() const override { return "conformance"; }
  std::vector<std::string> toggles() const override { return {"GRAPH", "PDL"}; }
  std::string graph_toggle() const override { return "GRAPH"; }
  void prepare() override {
    const char* phase = std::getenv("ORCH_HOST_PHASE");
    const char* devices = std::getenv("CUDA_VISIBLE_DEVICES");
    if (phase != nullptr && std::string(phase) == "1" && (devices == nullptr || *devices != '\0'))
      throw std::runtime_error("a device is visible during prepare()");
  }
  void setup(const orch_rank::Params& params) override {
    if (params.has("expect_devices")) {
      const char* devices = std::getenv("CUDA_VISIBLE_DEVICES");
      if (devices == nullptr || params.get_string("expect_devices", "") != devices)
        throw std::runtime_error("CUDA_VISIBLE_DEVICES is not the opened devices");
    }
    step_key = params.get_string("step_exchange", "");
    if (params.has("exchange")) exchanged = static_cast<double>(orch_rank::exchange(params.get_string("exchange", ""), "conformance-bytes").size());
  }
  void reset() override {
    for (int i = 0; i < 8; ++i) state[i] = static_cast<double>(orch_rank::seed() + i);
  }
  void step(const orch_rank::Toggles& t) override {
    if (!step_key.empty() && !step_tried) {
      step_tried = true;  // once, even when it throws
      step_exchanged = static_cast<double>(orch_rank::exchange(step_key, "step-bytes").size());
    }
    const double delta = t.on("PDL") ? 1.0 : 2.0;
    const auto body = [this, delta] {
      orch_rank::launch([this, delta] {
        for (double& x : state) x += delta;
      });
    };
    if (t.on("GRAPH")) orch_rank::graph("body", body);
    else body();
  }
  std::vector<orch_rank::Output> outputs() override { return {{"state", state, sizeof state, false}}; }
  std::map<std::string, double> counters() override {
    if (step_key.empty()) return {{"exchanged", exchanged}};
    return {{"exchanged", exchanged}, {"step_exchanged", step_exchanged}};
  }
};

int main() {
  Conformance p;
  return orch_rank::serve(p);
}
