// lazy_init: a first-use allocation inside the step makes the capture fail; the answer says why
// (capture ok:false, reason, fallback eager) and the run completes eagerly with the hashes of
// the same steps without the toggle.
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  Session s = cpu_session();
  Request plain = decode_request();
  plain.warmup = 1;
  plain.steps = 6;
  const auto expected = strings(of_type(ask(s, plain), "rep"), "hashes");

  Request lazy = plain;
  lazy.toggles.graph = true;
  lazy.toggles.lazy_init = true;
  const auto lines = ask(s, lazy);
  const json::Value cap = of_type(lines, "capture");
  CHECK(!boolean(cap, "ok"));
  CHECK(cap.find("reason") != nullptr && cap.find("reason")->text.find("allocation") != std::string::npos);
  CHECK_EQ(cap.find("fallback")->text, std::string("eager"));
  const json::Value rep = of_type(lines, "rep");
  CHECK_EQ(rep.find("mode")->text, std::string("eager"));
  CHECK(is_null(rep, "nodes"));
  CHECK(strings(rep, "hashes") == expected);
  CHECK(boolean(rep, "final"));

  // The identity gate under lazy_init: capture fails, the gate runs eager and says so.
  Request gate = lazy;
  gate.op = Op::Identity;
  const json::Value g = of_type(ask(s, gate), "gate");
  CHECK(boolean(g, "pass"));
  CHECK_EQ(g.find("mode")->text, std::string("eager"));

  // The same session still captures when the toggle is off (the failed capture left no debris).
  Request graph = plain;
  graph.toggles.graph = true;
  const auto after = ask(s, graph);
  CHECK(boolean(of_type(after, "capture"), "ok"));
  CHECK(strings(of_type(after, "rep"), "hashes") == expected);
  return finish("lazy_init_test");
}
