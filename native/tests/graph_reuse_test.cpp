// Graph reuse across interleaved arms: a resident session keeps one workload and one instantiated
// graph per capture key, so arms sent A B C ... C B A ... capture once each (`graph: "fresh"` on
// an arm's first graph rep, `"reused"` after), and every rep's hashes and launch counts equal
// those of the same request in a fresh session (a fresh capture) and, where the graph is exact,
// of an eager run of that arm. Then the planted bugs: a capture key that omits a toggle.
// - key without freeze_pointer, reuse unchecked: the plain arm replays the frozen-pointer graph;
//   its hashes differ from the fresh session's (caught by the hash comparison).
// - key without split_combine, reuse unchecked: the split arm replays the unsplit graph; the
//   hashes agree (the split is bit-identical by design) but launches_per_step and nodes do not.
// - key without pdl, reuse unchecked: on the CPU (no PDL) and on CUDA (PDL changes no bit) the
//   replay of the other arm's graph is indistinguishable by output; this is why the session
//   checks every cache hit against the request the entry was made for (field by field,
//   independently of the key): with that check on, the same planted key is an INTERNAL error at
//   the first mismatched reuse, never a silent replay.
#include <map>

#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

Request arm(const char* name, bool graph, bool Toggles::*on = nullptr) {
  Request r = decode_request();
  r.arm = name;
  r.warmup = 2;
  r.steps = 3;
  r.toggles.graph = graph;
  if (on != nullptr) r.toggles.*on = true;
  return r;
}

std::vector<Request> arms() {
  std::vector<Request> out{arm("graph", true),
                           arm("eager", false),
                           arm("graph+pdl", true, &Toggles::pdl),
                           arm("graph+overlap", true, &Toggles::overlap),
                           arm("graph+split", true, &Toggles::split_combine),
                           arm("graph+freeze", true, &Toggles::freeze_pointer)};
  Request wide = arm("graph h48", true);
  wide.params.hidden = 48;
  out.push_back(wide);
  return out;
}

// A B C ... C B A, twice: every arm meets a different neighbour on each side.
std::vector<std::size_t> interleaved(std::size_t n) {
  std::vector<std::size_t> order;
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < n; ++i) order.push_back(i);
    for (std::size_t i = n; i-- > 0;) order.push_back(i);
  }
  return order;
}

struct Answer {
  std::vector<std::string> hashes;
  double launches = -1;
  double nodes = -1;
  std::string graph;  // "fresh", "reused" or "" (null: eager)
};

Answer answer(const std::vector<json::Value>& lines) {
  const json::Value rep = of_type(lines, "rep");
  Answer a;
  a.hashes = strings(rep, "hashes");
  a.launches = number(rep, "launches_per_step");
  a.nodes = number(rep, "nodes");
  if (const auto* g = rep.find("graph"); g && g->kind == json::Value::Kind::String) a.graph = g->text;
  return a;
}

// The reference of one arm: the same request in a fresh session (a fresh capture), and an eager
// run of it.
struct Reference {
  Answer fresh;
  Answer eager;
};

Reference reference(const Request& r) {
  Reference ref;
  Session s = cpu_session();
  ref.fresh = answer(ask(s, r));
  Request e = r;
  e.toggles.graph = false;
  Session s2 = cpu_session();
  ref.eager = answer(ask(s2, e));
  return ref;
}

// Reps in `order` on `s`; the number of reps that differ from their arm's reference in hashes
// (`hash_bad`) or in launch counts (`count_bad`).
struct Mismatches {
  int hash_bad = 0;
  int count_bad = 0;
};

Mismatches run_interleaved(Session& s, const std::vector<Request>& rs, const std::vector<Reference>& refs,
                           const std::vector<std::size_t>& order) {
  Mismatches m;
  for (const std::size_t i : order) {
    const Answer a = answer(ask(s, rs[i]));
    if (a.hashes != refs[i].fresh.hashes) ++m.hash_bad;
    if (a.launches != refs[i].fresh.launches || a.nodes != refs[i].fresh.nodes) ++m.count_bad;
  }
  return m;
}

std::string key_without(const Request& r, bool Toggles::*field) {
  Request k = r;
  k.toggles.*field = false;
  return capture_key(k);
}

}  // namespace

int main() {
  const std::vector<Request> rs = arms();
  std::vector<Reference> refs;
  for (const auto& r : rs) refs.push_back(reference(r));
  const auto order = interleaved(rs.size());

  {  // the right key: one capture per graph arm, then reuse; every rep as a fresh session's
    Session s = cpu_session();
    std::map<std::string, int> captures;
    std::map<std::string, int> seen;
    int mismatched = 0;
    for (const std::size_t i : order) {
      const auto lines = ask(s, rs[i]);
      const Answer a = answer(lines);
      if (!of_type(lines, "capture").members.empty()) ++captures[rs[i].arm];
      const bool first = seen[rs[i].arm]++ == 0;
      if (rs[i].toggles.graph) CHECK_EQ(a.graph, std::string(first ? "fresh" : "reused"));
      else CHECK_EQ(a.graph, std::string());
      if (a.hashes != refs[i].fresh.hashes || a.launches != refs[i].fresh.launches || a.nodes != refs[i].fresh.nodes) {
        std::fprintf(stderr, "arm %s differs from a fresh session\n", rs[i].arm.c_str());
        ++mismatched;
      }
      // Graph replay equals eager for every arm but the frozen pointer (wrong from replay 2 on).
      if (!rs[i].toggles.freeze_pointer) CHECK(a.hashes == refs[i].eager.hashes);
      else CHECK(a.hashes != refs[i].eager.hashes);
    }
    CHECK_EQ(mismatched, 0);
    for (const auto& r : rs)
      if (r.toggles.graph) CHECK_EQ(captures[r.arm], 1);  // captured once for 4 reps
    CHECK_EQ(captures.count("eager"), std::size_t{0});
    // The identity gate still captures afresh, and the arm's next rep replays the gate's graph.
    Request gate = rs[0];
    gate.op = Op::Identity;
    const auto glines = ask(s, gate);
    CHECK(!of_type(glines, "capture").members.empty());
    CHECK(boolean(of_type(glines, "gate"), "pass"));
    const Answer after = answer(ask(s, rs[0]));
    CHECK_EQ(after.graph, std::string("reused"));
    CHECK(after.hashes == refs[0].fresh.hashes);
  }

  {  // a small cache: least recently used entries go, and come back as fresh captures
    SessionOptions o;
    o.max_cached = 2;
    Session s(make_cpu_backend(), {}, o);
    const Mismatches m = run_interleaved(s, rs, refs, order);
    CHECK_EQ(m.hash_bad, 0);
    CHECK_EQ(m.count_bad, 0);
  }

  {  // planted: the key omits freeze_pointer, reuse unchecked -> the hashes catch it
    SessionOptions o;
    o.key = [](const Request& r) { return key_without(r, &Toggles::freeze_pointer); };
    o.verify_reuse = false;
    Session s(make_cpu_backend(), {}, o);
    const Mismatches m = run_interleaved(s, rs, refs, order);
    std::printf("planted key without freeze_pointer: %d reps with other hashes\n", m.hash_bad);
    CHECK(m.hash_bad > 0);
  }

  {  // planted: the key omits split_combine, reuse unchecked -> the launch counts catch it
    SessionOptions o;
    o.key = [](const Request& r) { return key_without(r, &Toggles::split_combine); };
    o.verify_reuse = false;
    Session s(make_cpu_backend(), {}, o);
    const Mismatches m = run_interleaved(s, rs, refs, order);
    std::printf("planted key without split_combine: %d reps with other launch counts, %d with other hashes\n",
                m.count_bad, m.hash_bad);
    CHECK(m.count_bad > 0);
  }

  {  // planted: the key omits pdl. Unchecked, nothing in the output can tell ...
    SessionOptions o;
    o.key = [](const Request& r) { return key_without(r, &Toggles::pdl); };
    o.verify_reuse = false;
    Session s(make_cpu_backend(), {}, o);
    const Mismatches m = run_interleaved(s, rs, refs, order);
    std::printf("planted key without pdl, unchecked: %d reps differ (invisible on the CPU)\n", m.hash_bad + m.count_bad);
  }
  {  // ... so the session's reuse check (on by default) refuses it by name
    SessionOptions o;
    o.key = [](const Request& r) { return key_without(r, &Toggles::pdl); };
    Session s(make_cpu_backend(), {}, o);
    std::string refused;
    for (const std::size_t i : order) {
      try {
        ask(s, rs[i]);
      } catch (const RtError& e) {
        CHECK(e.errc() == Errc::Internal);
        refused = e.what();
        break;
      }
    }
    std::printf("planted key without pdl, checked: %s\n", refused.c_str());
    CHECK(refused.find("never replayed for another arm") != std::string::npos);
  }
  return finish("graph_reuse_test");
}
