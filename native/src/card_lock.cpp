#include "card_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graphrt/error.hpp"

namespace graphrt {

namespace {

void lock_or_busy(int fd, const std::string& what) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    throw RtError(Errc::CardBusy, "CARD_BUSY",
                  what + ": held by another process (" + std::strerror(err) + "); one graphrt process per card");
  }
}

}  // namespace

CardLock::CardLock(const std::string& path) {
  // O_NOFOLLOW: a symlink planted at the lock path must not make this create or lock another file;
  // 0600: nobody else may open (and so flock) this card's lock.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0)
    throw RtError(Errc::BadFlag, "BAD_FLAG", "--card-lock " + path + ": cannot open: " + std::strerror(errno));
  try {
    lock_or_busy(fd_, "--card-lock " + path);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

CardLock CardLock::from_fd(int fd) {
  const std::string what = "--card-lock-fd " + std::to_string(fd);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0)
    throw RtError(Errc::BadFlag, "BAD_FLAG", what + ": not an open descriptor (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw RtError(Errc::BadFlag, "BAD_FLAG", what + ": not a regular file (the card's lock file)");
  // Nothing this process starts may hold the card after it.
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  lock_or_busy(fd, what);
  CardLock l;
  l.fd_ = fd;
  return l;
}

CardLock::~CardLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace graphrt
