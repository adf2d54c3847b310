// The CPU backend's collective: each all-reduce is a host node on the device stream (see
// CpuBackend::launch_host), so it runs in stream order between the kernels around it, eager or
// replayed from a graph, and blocks that device thread until every rank has contributed — what an
// NCCL kernel does on a GPU.
#include "collective.hpp"
#include "cpu/cpu_backend.hpp"

namespace graphrt::detail {
namespace {

struct AllReduceArgs {
  Rendezvous* rv;
  float* buf;
  std::size_t count;
};

void run_all_reduce(Dim3, Dim3, const void* raw) {
  const auto& a = *static_cast<const AllReduceArgs*>(raw);
  try {
    a.rv->all_reduce_sum(a.buf, a.count);
  } catch (const RtError& e) {
    collective_fatal(e);
  } catch (const std::exception& e) {
    collective_fatal(RtError(Errc::Internal, "INTERNAL", std::string("all-reduce: ") + e.what()));
  }
}

class CpuCollective final : public Collective {
 public:
  CpuCollective(cpu::CpuBackend& cpu, std::unique_ptr<Rendezvous> rv) : Collective(cpu, std::move(rv)), cpu_(cpu) {
    start_watchdog();
  }
  ~CpuCollective() override { stop_watchdog(); }

  void all_reduce_sum(StreamRaw stream, float* buf, std::size_t count) override {
    const AllReduceArgs args{rv_.get(), buf, count};
    cpu_.launch_host(stream, &run_all_reduce, &args, sizeof args);
  }
  std::optional<std::size_t> nodes_per_call() const override { return 1; }

 private:
  cpu::CpuBackend& cpu_;
};

}  // namespace

std::unique_ptr<Collective> make_cpu_collective(Backend& backend, std::unique_ptr<Rendezvous> rv) {
  auto* cpu = dynamic_cast<cpu::CpuBackend*>(&backend);
  RT_CHECK(cpu != nullptr, Errc::Internal, "", "the cpu collective needs the cpu backend");
  return std::make_unique<CpuCollective>(*cpu, std::move(rv));
}

}  // namespace graphrt::detail
