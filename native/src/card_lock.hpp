// The card's host guard: an exclusive, non-blocking flock held for the process's whole life, so
// no process outside the card's rank can use the card. The kernel drops it when the last holder
// of the lock's open file description is gone.
//
// --card-lock PATH: the process opens PATH itself (a fresh open file description): one graphrt
//   process per card.
// --card-lock-fd N: the worker opened the card's lock file and passes that one open file
//   description to every rank process of the card (one per build of a block's arms) as fd N. A
//   flock belongs to the open file description, not the process: it succeeds for every holder of
//   that description (the worker may have locked it already) and is CARD_BUSY for any other.
#pragma once

#include <string>

namespace graphrt {

class CardLock {
 public:
  // Throws RtError(CardBusy) when another process holds it, BadFlag when PATH cannot be opened.
  explicit CardLock(const std::string& path);
  // Takes the lock on the inherited descriptor `fd` and keeps it: CardBusy as above, BadFlag when
  // fd is not an open regular file.
  static CardLock from_fd(int fd);
  CardLock(CardLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CardLock(const CardLock&) = delete;
  CardLock& operator=(const CardLock&) = delete;
  CardLock& operator=(CardLock&&) = delete;
  ~CardLock();

 private:
  CardLock() = default;
  int fd_ = -1;
};

}  // namespace graphrt
