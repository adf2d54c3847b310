#include "nvml_clocks.hpp"

#include <dlfcn.h>

#include <cstdint>

namespace graphrt::cuda {
namespace {

// The few NVML entry points used, declared here (nvml.h is not part of the CUDA toolkit on every
// machine). Signatures as in nvml.h; 0 is NVML_SUCCESS.
using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleByPciFn = int (*)(const char*, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned*);
using ReasonsFn = int (*)(NvmlDevice, unsigned long long*);
using TempFn = int (*)(NvmlDevice, int, unsigned*);
using PowerFn = int (*)(NvmlDevice, unsigned*);
using DriverFn = int (*)(char*, unsigned);
using EccFn = int (*)(NvmlDevice, int, int, unsigned long long*);

constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kTempGpu = 0;   // NVML_TEMPERATURE_GPU
constexpr int kEccUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kEccVolatile = 0;     // NVML_VOLATILE_ECC: since the driver loaded

// nvmlClocksEventReason* bits, named as nvidia-smi -q names them.
constexpr std::pair<unsigned long long, const char*> kReasons[] = {
    {0x1ULL, "gpu_idle"},           {0x2ULL, "applications_clocks_setting"},
    {0x4ULL, "sw_power_cap"},       {0x8ULL, "hw_slowdown"},
    {0x10ULL, "sync_boost"},        {0x20ULL, "sw_thermal_slowdown"},
    {0x40ULL, "hw_thermal_slowdown"}, {0x80ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
};

}  // namespace

struct NvmlClocks::Api {
  ShutdownFn shutdown = nullptr;
  ClockFn clock = nullptr;
  ReasonsFn reasons = nullptr;
  TempFn temperature = nullptr;
  PowerFn power = nullptr;
  DriverFn driver = nullptr;
  EccFn ecc = nullptr;
};

NvmlClocks::NvmlClocks(const std::string& pci_bus_id) {
  lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) return;
  auto sym = [this](const char* name) { return ::dlsym(lib_, name); };
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto by_pci = reinterpret_cast<HandleByPciFn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto a = new Api;
  a->shutdown = reinterpret_cast<ShutdownFn>(sym("nvmlShutdown"));
  a->clock = reinterpret_cast<ClockFn>(sym("nvmlDeviceGetClockInfo"));
  a->reasons = reinterpret_cast<ReasonsFn>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
  if (a->reasons == nullptr) a->reasons = reinterpret_cast<ReasonsFn>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
  a->temperature = reinterpret_cast<TempFn>(sym("nvmlDeviceGetTemperature"));
  a->power = reinterpret_cast<PowerFn>(sym("nvmlDeviceGetPowerUsage"));
  a->driver = reinterpret_cast<DriverFn>(sym("nvmlSystemGetDriverVersion"));
  a->ecc = reinterpret_cast<EccFn>(sym("nvmlDeviceGetTotalEccErrors"));
  NvmlDevice dev = nullptr;
  if (init == nullptr || by_pci == nullptr || a->shutdown == nullptr || a->clock == nullptr || init() != 0) {
    delete a;
    ::dlclose(lib_);
    lib_ = nullptr;
    return;
  }
  api_ = a;
  if (by_pci(pci_bus_id.c_str(), &dev) == 0) device_ = dev;
}

NvmlClocks::~NvmlClocks() {
  if (api_ != nullptr) api_->shutdown();
  delete api_;
  if (lib_ != nullptr) ::dlclose(lib_);
}

std::optional<ClockReading> NvmlClocks::read() const {
  if (api_ == nullptr || device_ == nullptr) return std::nullopt;
  ClockReading r;
  unsigned v = 0;
  if (api_->clock(device_, kClockSm, &v) == 0) r.sm_mhz = static_cast<int>(v);
  if (api_->clock(device_, kClockMem, &v) == 0) r.mem_mhz = static_cast<int>(v);
  if (api_->temperature != nullptr && api_->temperature(device_, kTempGpu, &v) == 0) r.temp_c = static_cast<int>(v);
  if (api_->power != nullptr && api_->power(device_, &v) == 0) r.power_w = v / 1000.0;
  unsigned long long bits = 0;
  if (api_->reasons != nullptr && api_->reasons(device_, &bits) == 0) {
    r.reasons_mask = bits;
    for (const auto& [bit, name] : kReasons)
      if ((bits & bit) != 0) r.reasons.emplace_back(name);
  }
  return r;
}

std::optional<std::uint64_t> NvmlClocks::ecc_errors() const {
  if (api_ == nullptr || device_ == nullptr || api_->ecc == nullptr) return std::nullopt;
  unsigned long long n = 0;
  if (api_->ecc(device_, kEccUncorrected, kEccVolatile, &n) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(n);
}

std::string NvmlClocks::driver_version() const {
  if (api_ == nullptr || api_->driver == nullptr) return {};
  char buf[96] = {};
  return api_->driver(buf, sizeof buf) == 0 ? std::string(buf) : std::string();
}

}  // namespace graphrt::cuda
