// --card-lock PATH: an exclusive, non-blocking flock held for the process's whole life, so two
// graphrt processes never share a card. The kernel drops it when the process dies.
#pragma once

#include <string>

namespace graphrt {

class CardLock {
 public:
  // Throws RtError(CardBusy) when another process holds it, BadFlag when PATH cannot be opened.
  explicit CardLock(const std::string& path);
  CardLock(const CardLock&) = delete;
  CardLock& operator=(const CardLock&) = delete;
  ~CardLock();

 private:
  int fd_ = -1;
};

}  // namespace graphrt
