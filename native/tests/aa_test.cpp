// A/A: the same arm twice gives identical hashes — in one resident session, after other arms ran
// in between, and in a fresh session. Also the layout toggles that must not change the numbers:
// split_combine and overlap give the hashes of the plain step, eager and graph.
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  Session s = cpu_session();
  for (const char* workload : {"chain", "decode", "train"}) {
    Request a = decode_request();
    a.workload = workload;
    a.arm = "a";
    a.toggles.graph = true;
    a.toggles.pin = a.workload == "train";  // unpinned train graphs diverge by design (train_test)
    Request b = a;
    b.arm = "b";
    b.toggles.graph = false;
    b.toggles.pdl = true;
    const auto first = strings(of_type(ask(s, a), "rep"), "hashes");
    const auto other = strings(of_type(ask(s, b), "rep"), "hashes");
    const auto second = strings(of_type(ask(s, a), "rep"), "hashes");
    Session fresh = cpu_session();
    const auto third = strings(of_type(ask(fresh, a), "rep"), "hashes");
    REQUIRE(first.size() == 8);
    CHECK(first == second);
    CHECK(first == third);
    CHECK(first == other);  // graph vs eager: the same steps
    CHECK(first[0] != first[1]);
  }

  Request base = decode_request();
  const auto plain = strings(of_type(ask(s, base), "rep"), "hashes");
  for (int mask = 1; mask < 8; ++mask) {
    Request r = base;
    r.toggles.split_combine = mask & 1;
    r.toggles.overlap = mask & 2;
    r.toggles.graph = mask & 4;
    CHECK(strings(of_type(ask(s, r), "rep"), "hashes") == plain);
  }
  return finish("aa_test");
}
