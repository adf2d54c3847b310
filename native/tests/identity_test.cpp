// The identity gate on decode: graph replay is bit-identical to eager over capture + 7 replays
// under every combination of the layout toggles; the frozen pointer is right at replay 1 and
// wrong from replay 2 on (a one-replay gate would have passed it).
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  Session s = cpu_session();
  for (int mask = 0; mask < 8; ++mask) {
    Request r = decode_request();
    r.op = Op::Identity;
    r.replays = 7;
    r.toggles.overlap = mask & 1;
    r.toggles.split_combine = mask & 2;
    r.toggles.pdl = mask & 4;
    const auto lines = ask(s, r);
    const json::Value gate = of_type(lines, "gate");
    CHECK(boolean(of_type(lines, "capture"), "ok"));
    CHECK(boolean(gate, "pass"));
    CHECK(is_null(gate, "first_bad_replay"));
    CHECK_EQ(strings(gate, "graph_hashes").size(), std::size_t{7});
    CHECK(strings(gate, "eager_hashes") == strings(gate, "graph_hashes"));
    // The step really changes: the position moves, so every step's hash differs.
    const auto h = strings(gate, "eager_hashes");
    CHECK(h.size() == 7 && h[0] != h[1] && h[1] != h[2]);
    const double launches = 3 + 2 * (10 + (r.toggles.split_combine ? 1 : 0));
    CHECK_EQ(number(gate, "nodes"), launches);
    CHECK_EQ(number(gate, "launches_per_step"), launches);
  }

  Request frozen = decode_request();
  frozen.op = Op::Identity;
  frozen.replays = 7;
  frozen.toggles.freeze_pointer = true;
  const auto lines = ask(s, frozen);
  const json::Value gate = of_type(lines, "gate");
  const auto eager = strings(gate, "eager_hashes");
  const auto graph = strings(gate, "graph_hashes");
  CHECK(!boolean(gate, "pass"));
  CHECK_EQ(number(gate, "first_bad_replay"), 2.0);
  CHECK(eager.size() == 7 && graph.size() == 7);
  CHECK_EQ(eager[0], graph[0]);  // replay 1 executes exactly what was captured: right
  for (std::size_t k = 1; k < graph.size(); ++k) CHECK(eager[k] != graph[k]);  // then stale
  // Eager with the frozen pointer is still right: the host copy of the position is current.
  Request eager_frozen = frozen;
  eager_frozen.op = Op::Rep;
  eager_frozen.warmup = 0;
  eager_frozen.steps = 7;
  CHECK(strings(of_type(ask(s, eager_frozen), "rep"), "hashes") == eager);
  return finish("identity_test");
}
