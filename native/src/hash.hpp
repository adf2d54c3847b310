// FNV-1a 64 over bytes, as 16 lowercase hex digits: the per-step output hash of the protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace graphrt {

inline std::string fnv1a64_hex(const void* data, std::size_t bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace graphrt
