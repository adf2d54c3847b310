// The settle (PROTOCOL.md, rep line `settle_ms`): every graph rep first runs one eager step of its
// own arm with PDL on from the seed's state, then resets, so the launch state its replays meet on
// a GPU is the same whatever arm ran before. Here, on the CPU backend: the settle runs exactly for
// graph reps (settle_ms a number there, null on eager reps), with or without pdl, and it leaves no
// trace in what the rep measures: its hashes are those of the same arm in a session that made no
// settle step (the eager run, where graph and eager agree) and the same with and without pdl, for
// chain, decode with every toggle, and train with pinned and with moving parameters (where an
// eager step between replays would move an address the graph froze, were the state not reset
// after it).
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

json::Value rep_of(const Request& r) {
  Session s = cpu_session();
  return of_type(ask(s, r), "rep");
}

void check_workload(Request r, const char* what) {
  r.warmup = 2;
  r.steps = 4;
  r.toggles.graph = true;
  r.toggles.pdl = true;
  const json::Value settled = rep_of(r);
  REQUIRE(!settled.members.empty());
  if (number(settled, "settle_ms") < 0) std::fprintf(stderr, "%s: graph rep without settle_ms\n", what);
  CHECK(number(settled, "settle_ms") >= 0);

  Request no_pdl = r;
  no_pdl.toggles.pdl = false;
  const json::Value plain = rep_of(no_pdl);
  CHECK(number(plain, "settle_ms") >= 0);
  CHECK_EQ(strings(settled, "hashes"), strings(plain, "hashes"));

  Request eager = r;
  eager.toggles.graph = false;
  const json::Value e = rep_of(eager);
  CHECK(is_null(e, "settle_ms"));
  if (r.workload != "train" || r.toggles.pin) CHECK_EQ(strings(settled, "hashes"), strings(e, "hashes"));
  CHECK_EQ(number(settled, "launches_per_step"), number(plain, "launches_per_step"));
}

}  // namespace

int main() {
  Request chain;
  chain.workload = "chain";
  chain.params.kernels = 23;
  check_workload(chain, "chain");

  Request decode = decode_request();
  decode.toggles.overlap = true;
  decode.toggles.split_combine = true;
  check_workload(decode, "decode");

  Request train;
  train.workload = "train";
  train.params.params = 3;
  train.params.param_size = 64;
  train.toggles.pin = true;
  check_workload(train, "train (pinned)");
  train.toggles.pin = false;  // moving addresses: graph and eager differ, the settle still leaves no trace
  check_workload(train, "train (moving)");

  {  // a resident session: the settle runs on every graph rep, fresh capture or reused graph
    Session s = cpu_session();
    Request r = decode_request();
    r.toggles.graph = true;
    r.toggles.pdl = true;
    r.warmup = 1;
    r.steps = 2;
    const json::Value first = of_type(ask(s, r), "rep");
    const json::Value second = of_type(ask(s, r), "rep");
    CHECK(first.find("graph") && first.find("graph")->text == "fresh");
    CHECK(second.find("graph") && second.find("graph")->text == "reused");
    CHECK(number(first, "settle_ms") >= 0);
    CHECK(number(second, "settle_ms") >= 0);
    CHECK_EQ(strings(first, "hashes"), strings(second, "hashes"));
  }
  return finish("settle_test");
}
