#include "card_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graphrt/error.hpp"

namespace graphrt {

CardLock::CardLock(const std::string& path) {
  // O_NOFOLLOW: a symlink planted at the lock path must not make this create or lock another file;
  // 0600: nobody else may open (and so flock) this card's lock.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0)
    throw RtError(Errc::BadFlag, "BAD_FLAG", "--card-lock " + path + ": cannot open: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw RtError(Errc::CardBusy, "CARD_BUSY",
                  "--card-lock " + path + ": held by another process (" + std::strerror(err) +
                      "); one graphrt process per card");
  }
}

CardLock::~CardLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace graphrt
