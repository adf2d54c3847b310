// Read-only weights shared within a process: decode workloads of the same sizes and seed (any
// toggles) take one set of device weights from the session's shelf, made once.
// - seeded_floats made on any number of threads is byte for byte the one sequential splitmix loop.
// - Sharing changes no hash: every arm's reps equal the same request in a fresh session, every
//   gate passes, one set is made for five capture keys, and the weights' digest is the same after
//   every gate and rep as before (no step writes them).
// - A new seed gives a new set at other addresses: the arm's graph is captured again (never a
//   replay naming the old seed's weights), and its hashes are the new seed's.
// - The identity gate's eager step 1 (from the reset state) is its capture's reference step: the
//   capture matches its launches, and GraphSlot::prepared_by is refused over a live graph like
//   prepare(); a frozen pointer is still caught at replay 2.
// - Planted: arms with `overlap` write the shared bias weights. The writer's identity gate fails
//   (its eager steps moved the weights its replays then start from), and an arm that never
//   writes gives other hashes for the same request once the writer ran (the repeat check an A/A
//   makes); the digest moves.
#include <cstring>
#include <map>

#include "graph_slot.hpp"
#include "harness.hpp"
#include "steps.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

// The generator as it was written before it was split over threads: the reference bytes.
std::vector<float> sequential(std::uint64_t seed, std::uint64_t stream, std::size_t count, float scale) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 1;
  std::vector<float> out(count);
  for (auto& v : out) {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    v = scale * (static_cast<float>(z >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f);
  }
  return out;
}

Request arm(const char* name, bool graph, std::initializer_list<bool Toggles::*> on = {}) {
  Request r = decode_request();
  r.arm = name;
  r.params.layers = 3;
  r.params.hidden = 32;
  r.params.max_pos = 16;
  r.params.kernels_per_layer = 12;  // three bias fillers
  r.warmup = 1;
  r.steps = 3;
  r.replays = 3;
  r.toggles.graph = graph;
  for (auto t : on) r.toggles.*t = true;
  return r;
}

Request identity(Request r) {
  r.op = Op::Identity;
  return r;
}

std::vector<std::string> hashes(Session& s, const Request& r) { return strings(of_type(ask(s, r), "rep"), "hashes"); }

std::string graph_use(const std::vector<json::Value>& lines) {
  const json::Value rep = of_type(lines, "rep");
  const auto* g = rep.find("graph");
  return g != nullptr && g->kind == json::Value::Kind::String ? g->text : "";
}

}  // namespace

int main() {
  {  // the generator's bytes do not depend on the threads
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, (std::size_t{1} << 18) - 1,
                                    (std::size_t{1} << 18) + 3, 3 * (std::size_t{1} << 18) + 7, (std::size_t{1} << 20) + 1}) {
      const auto ref = sequential(7, 5, count, 0.0625f);
      for (const std::size_t threads : {1, 2, 3, 7, 16}) {
        const auto got = seeded_floats(7, 5, count, 0.0625f, threads);
        CHECK(got.size() == ref.size() && std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      }
      const auto host = seeded_floats(7, 5, count, 0.0625f);  // the host's cores
      CHECK(host.size() == ref.size() && std::memcmp(host.data(), ref.data(), ref.size() * sizeof(float)) == 0);
    }
  }

  const std::vector<Request> arms{arm("base", false),
                                  arm("all_on", true, {&Toggles::pdl, &Toggles::overlap, &Toggles::split_combine}),
                                  arm("no_graph", false, {&Toggles::pdl, &Toggles::overlap, &Toggles::split_combine}),
                                  arm("no_pdl", true, {&Toggles::overlap, &Toggles::split_combine}),
                                  arm("no_overlap", true, {&Toggles::pdl, &Toggles::split_combine}),
                                  arm("no_split", true, {&Toggles::pdl, &Toggles::overlap})};
  std::map<std::string, std::vector<std::string>> fresh;  // each arm alone in a fresh session
  for (const auto& r : arms) {
    Session s = cpu_session();
    fresh[r.arm] = hashes(s, r);
  }

  {  // shared: one set for every capture key; no hash moves; the weights are as generated after all
    Session s = cpu_session();
    std::string digest;
    for (const auto& r : arms) {
      if (!r.toggles.graph) continue;
      const auto g = of_type(ask(s, identity(r)), "gate");
      CHECK(boolean(g, "pass"));
      if (digest.empty()) digest = s.shelf().digests().at(0);
    }
    for (int round = 0; round < 2; ++round)
      for (const auto& r : arms) CHECK(hashes(s, r) == fresh[r.arm]);
    CHECK_EQ(s.shelf().made(), std::size_t{1});
    REQUIRE(s.shelf().digests().size() == 1);
    CHECK_EQ(s.shelf().digests()[0], digest);
    // Another process's shelf (another session) generates the same bytes.
    Session alone = cpu_session();
    ask(alone, arms[0]);
    CHECK_EQ(alone.shelf().digests().at(0), digest);

    // Another seed: a new set; the graph arm captures again and gives that seed's hashes.
    Request seed2 = arms[1];
    seed2.seed = 2;
    Session s2 = cpu_session();
    const auto ref2 = hashes(s2, seed2);
    CHECK(ref2 != fresh["all_on"]);
    const auto lines = ask(s, seed2);
    CHECK_EQ(graph_use(lines), std::string("fresh"));
    CHECK(strings(of_type(lines, "rep"), "hashes") == ref2);
    CHECK_EQ(s.shelf().made(), std::size_t{2});
    const auto back = ask(s, arms[1]);  // and back: seed 1 again, captured again
    CHECK_EQ(graph_use(back), std::string("fresh"));
    CHECK(strings(of_type(back, "rep"), "hashes") == fresh["all_on"]);
    CHECK_EQ(graph_use(ask(s, arms[1])), std::string("reused"));
  }

  {  // the gate's own eager step 1 stands for the prepare's
    Session s = cpu_session();
    const auto lines = ask(s, identity(arms[1]));
    const json::Value cap = of_type(lines, "capture"), g = of_type(lines, "gate");
    CHECK(boolean(cap, "ok") && boolean(g, "pass"));
    CHECK_EQ(number(cap, "launches"), number(g, "launches_per_step"));
    CHECK_EQ(number(g, "nodes"), number(g, "launches_per_step"));
    Request frozen = arm("frozen", true, {&Toggles::freeze_pointer});
    const auto fg = of_type(ask(s, identity(frozen)), "gate");
    CHECK(!boolean(fg, "pass"));
    CHECK_EQ(number(fg, "first_bad_replay"), 2.0);
    auto backend = make_cpu_backend();
    Context ctx(*backend);
    auto w = make_workload(*backend, arms[1]);
    GraphSlot slot(*backend);
    w->reset(1);
    const StepRun eager = run_steps(ctx, *w, nullptr, 0, 2);
    slot.prepared_by(eager.first_launches, eager.first_collectives, "k");
    w->reset(1);
    CHECK(slot.capture(ctx, *w).ok);
    bool refused = false;
    try {
      slot.prepared_by(eager.first_launches, eager.first_collectives, "k");
    } catch (const RtError& e) {
      refused = e.errc() == Errc::CaptureRefused && std::string(e.name()) == "RECAPTURE_OVER_LIVE_GRAPH";
    }
    CHECK(refused);
  }

  {  // planted: arms with overlap write the shared bias weights
    SessionOptions planted;
    planted.plant_shared_write = true;
    Session s(make_cpu_backend(), {}, planted);
    const Request& reader = arms[4];  // no_overlap: never writes
    const Request& writer = arms[1];  // all_on: writes
    const auto before = hashes(s, reader);
    CHECK(before == fresh[reader.arm]);  // nothing written yet
    const std::string digest = s.shelf().digests().at(0);
    CHECK(boolean(of_type(ask(s, identity(reader)), "gate"), "pass"));
    const auto g = of_type(ask(s, identity(writer)), "gate");
    CHECK(!boolean(g, "pass"));  // the identity gate catches the writer
    CHECK_EQ(number(g, "first_bad_replay"), 1.0);
    CHECK(s.shelf().digests().at(0) != digest);
    CHECK(hashes(s, reader) != before);  // the same request, other hashes: the repeat check catches it
  }

  return finish("shared_weights_test");
}
