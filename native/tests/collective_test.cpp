// Multi-rank in one process (ranks as threads; the rendezvous does not care): the all-reduce gives
// every rank the bits of the rank-order sum ((b0 + b1) + b2) + b3; a rank that leaves is RankLost
// for the others, naming it; three CPU sessions with the decode allreduce toggle capture a graph
// holding one node per all-reduce and pass the identity gate with the same hashes on every rank;
// their graph reps count the same kernel launches per step as eager (the all-reduce nodes apart).
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.hpp"
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

template <class F>
void per_rank(int world, F f) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back([&f, r] { f(r); });
  for (auto& t : threads) t.join();
}

std::vector<float> values_of(int rank, std::size_t n) {
  return seeded_floats(1, 100 + static_cast<std::uint64_t>(rank), n, 1000.0f);
}

}  // namespace

int main() {
  constexpr int kWorld = 4;
  constexpr std::size_t kN = 257;
  {  // determinism: every rank holds the rank-order sum, bit for bit
    const FreshSocket sock;
    const std::string& path = sock.path;
    std::vector<std::vector<float>> out(kWorld);
    per_rank(kWorld, [&](int r) {
      Rendezvous rv(path, kWorld, r, std::chrono::milliseconds(10000), RendezvousBlob{});
      out[r] = values_of(r, kN);
      rv.all_reduce_sum(out[r].data(), kN);
    });
    std::vector<float> want = values_of(0, kN);
    for (int r = 1; r < kWorld; ++r) {
      const auto v = values_of(r, kN);
      for (std::size_t i = 0; i < kN; ++i) want[i] += v[i];
    }
    for (int r = 0; r < kWorld; ++r) CHECK(out[r] == want);
  }
  {  // rank 3 leaves after the first all-reduce: the others' second one is RankLost naming it
    const FreshSocket sock;
    const std::string& path = sock.path;
    std::vector<std::string> errors(kWorld);
    per_rank(kWorld, [&](int r) {
      Rendezvous rv(path, kWorld, r, std::chrono::milliseconds(10000), RendezvousBlob{});
      std::vector<float> buf(8, 1.0f);
      rv.all_reduce_sum(buf.data(), buf.size());
      if (r == 3) return;  // closes its socket
      try {
        rv.all_reduce_sum(buf.data(), buf.size());
      } catch (const RtError& e) {
        if (e.errc() == Errc::RankLost) errors[r] = e.what();
      }
    });
    CHECK(errors[0].find("rank 3 closed its connection") != std::string::npos);
    CHECK(errors[1].find("lost rank 3") != std::string::npos);
    CHECK(errors[2].find("lost rank 3") != std::string::npos);
  }
  {  // three CPU sessions: decode with one all-reduce per layer, captured and gated on every rank
    constexpr int kRanks = 3;
    const FreshSocket sock;
    const std::string& path = sock.path;
    std::vector<json::Value> gates(kRanks), reps(kRanks);
    per_rank(kRanks, [&](int r) {
      auto backend = make_cpu_backend();
      RankSetup setup;
      setup.comm = connect_collective(*backend, CollectiveOptions{path, {}, kRanks, r, 10000});
      Session s(std::move(backend), std::move(setup));
      Request req = decode_request();
      req.op = Op::Identity;
      req.replays = 4;
      req.toggles.graph = true;
      req.toggles.allreduce = true;
      gates[r] = of_type(ask(s, req), "gate");
      req.op = Op::Rep;
      reps[r] = of_type(ask(s, req), "rep");
    });
    for (int r = 0; r < kRanks; ++r) {
      CHECK(boolean(gates[r], "pass"));
      CHECK_EQ(gates[r].find("mode")->text, std::string("graph"));
      CHECK_EQ(number(gates[r], "collectives_per_step"), 2.0);
      CHECK_EQ(number(gates[r], "nodes"), number(gates[r], "launches_per_step") + 2);
      CHECK(strings(gates[r], "graph_hashes") == strings(gates[0], "eager_hashes"));
      // A graph rep's launches are the kernels it holds, as eager counts them; its nodes add the collectives.
      CHECK_EQ(reps[r].find("mode")->text, std::string("graph"));
      CHECK_EQ(number(reps[r], "launches_per_step"), number(gates[r], "launches_per_step"));
      CHECK_EQ(number(reps[r], "nodes"), number(gates[r], "nodes"));
    }
  }
  return finish("collective_test");
}
