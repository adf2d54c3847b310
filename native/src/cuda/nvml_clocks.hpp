// Clocks and throttle reasons through NVML, loaded at run time with dlopen("libnvidia-ml.so.1") so
// the binary links and runs where no driver is installed (CI). No NVML: read() answers nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "graphrt/backend.hpp"

namespace graphrt::cuda {

class NvmlClocks {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId writes it.
  explicit NvmlClocks(const std::string& pci_bus_id);
  ~NvmlClocks();
  NvmlClocks(const NvmlClocks&) = delete;
  NvmlClocks& operator=(const NvmlClocks&) = delete;

  std::optional<ClockReading> read() const;
  // Volatile uncorrected ECC errors of the device (nvmlDeviceGetTotalEccErrors); none where NVML
  // is not there or does not count them (ECC off).
  std::optional<std::uint64_t> ecc_errors() const;
  // The driver version NVML reports ("580.159.04"), or empty.
  std::string driver_version() const;

 private:
  struct Api;
  void* lib_ = nullptr;
  Api* api_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace graphrt::cuda
