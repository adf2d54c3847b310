// train: the out-of-place optimizer moves each parameter between two addresses (period 2); an
// unpinned graph trains on the stale block and diverges from the eager oracle (the same steps
// run without a graph) from replay 2; pinned, the graph is bit-identical over 8 steps at one copy
// per parameter.
#include "harness.hpp"
#include "workloads/train.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  Session s = cpu_session();
  Request r;
  r.workload = "train";
  r.params.params = 5;
  r.params.param_size = 100;
  r.warmup = 0;
  r.steps = 8;

  const auto oracle_lines = ask(s, r);  // eager: the oracle
  const auto oracle = strings(of_type(oracle_lines, "rep"), "hashes");
  REQUIRE(oracle.size() == 8);
  CHECK(oracle[0] != oracle[1]);

  Request unpinned = r;
  unpinned.toggles.graph = true;
  const json::Value rep = of_type(ask(s, unpinned), "rep");
  CHECK_EQ(rep.find("mode")->text, std::string("graph"));
  const auto graph = strings(rep, "hashes");
  REQUIRE(graph.size() == 8);
  CHECK_EQ(graph[0], oracle[0]);
  for (std::size_t k = 1; k < 8; ++k) CHECK(graph[k] != oracle[k]);  // silently stale
  const json::Value* tr = rep.find("train");
  CHECK(tr != nullptr);
  CHECK_EQ(number(*tr, "L"), 15.0);
  CHECK_EQ(number(*tr, "P"), 0.0);

  Request pinned = r;
  pinned.toggles.graph = true;
  pinned.toggles.pin = true;
  const json::Value prep = of_type(ask(s, pinned), "rep");
  CHECK(strings(prep, "hashes") == oracle);  // bit-identical to the unpinned eager run
  const json::Value* ptr = prep.find("train");
  CHECK(ptr != nullptr);
  CHECK_EQ(number(*ptr, "L"), 20.0);
  CHECK_EQ(number(*ptr, "P"), 5.0);
  CHECK(boolean(*ptr, "win"));
  CHECK_EQ(number(prep, "dispatches_per_step"), 1.0);

  // The address of a parameter alternates with period 2 (the LIFO pool).
  auto backend = make_cpu_backend();
  Context ctx(*backend);
  TrainWorkload w(*backend, r);
  w.reset(1);
  std::vector<const float*> at{w.param_address(0)};
  for (int i = 0; i < 4; ++i) {
    w.run_step(ctx);
    at.push_back(w.param_address(0));
  }
  backend->synchronize();
  CHECK(at[0] != at[1]);
  CHECK(at[0] == at[2] && at[2] == at[4]);
  CHECK(at[1] == at[3]);
  return finish("train_test");
}
