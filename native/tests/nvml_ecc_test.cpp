// A rep's volatile uncorrected ECC errors through graphrt's NVML code (src/cuda/nvml_clocks.cpp)
// against the planted stand-in libnvidia-ml.so.1 (test/fixtures/planted-nvml/, built beside this
// test and found through LD_LIBRARY_PATH, set by CMake): the session reads the count before and
// after the rep and puts the difference on the rep line (`ecc_errors`, lines.cpp `ecc_during`), which
// orch's clock hygiene marks throttled. No GPU needed: NVML is the stand-in; the CUDA backend is
// not started. A CPU-only build has no NVML code: skipped (77).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.hpp"
#include "lines.hpp"
#if defined(GRAPHRT_WITH_CUDA)
#include "cuda/nvml_clocks.hpp"
#endif

using namespace graphrt;
using namespace graphrt::test;

int main() {
#if !defined(GRAPHRT_WITH_CUDA)
  return 77;
#else
  // one line per clock reading: "<reasons hex> <xids> <ecc errors that came with it>"
  const std::string planted = std::string(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp") + "/nvml_ecc_test.planted";
  std::FILE* f = std::fopen(planted.c_str(), "w");
  CHECK(f != nullptr);
  std::fputs("0 0 0\n0 0 2\n0 0 0\n0 0 0\n", f);
  std::fclose(f);
  ::setenv("PLANTED_NVML", planted.c_str(), 1);
  cuda::NvmlClocks nvml("00000000:01:00.0");
  CHECK_EQ(nvml.driver_version(), std::string("planted"));  // the stand-in, not a driver of this machine
  // rep 1: two errors came with its end reading
  CHECK(nvml.read().has_value());
  const auto start1 = nvml.ecc_errors();
  CHECK(nvml.read().has_value());
  const auto rep1 = ecc_during(start1, nvml.ecc_errors());
  CHECK(rep1.has_value());
  if (!rep1) return finish("nvml_ecc_test");
  CHECK_EQ(*rep1, std::uint64_t{2});
  // rep 2: none new, though the device's count stays 2
  CHECK(nvml.read().has_value());
  const auto start2 = nvml.ecc_errors();
  CHECK(nvml.read().has_value());
  const auto end2 = nvml.ecc_errors();
  CHECK(start2.has_value() && end2.has_value());
  if (!start2 || !end2) return finish("nvml_ecc_test");
  CHECK_EQ(*end2, std::uint64_t{2});
  CHECK_EQ(*ecc_during(start2, end2), std::uint64_t{0});
  // not read on either side: no count, never a zero
  CHECK(!ecc_during(std::nullopt, end2).has_value());
  CHECK(!ecc_during(start2, std::nullopt).has_value());
  // the driver reloaded between the readings (the count went down): the new count is the rep's
  CHECK_EQ(*ecc_during(std::uint64_t{5}, std::uint64_t{1}), std::uint64_t{1});
  std::remove(planted.c_str());
  return finish("nvml_ecc_test");
#endif
}
