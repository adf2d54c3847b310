// The card lock's hand-off (card_lock.hpp): a flock belongs to the open file description, so every
// process holding the description the worker passed down (--card-lock-fd) holds the card together,
// and a process with a description of its own (--card-lock PATH, or another open of the file) is
// CARD_BUSY until the last holder of the shared one is gone.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>


#include "card_lock.hpp"
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

// Takes the card's lock, on `fd` when it is one, else on a fresh open of `path`, and drops it
// again (the descriptor is closed): "ok", or the protocol code of the refusal.
std::string lock_once(int fd, const std::string& path = "") {
  try {
    if (fd >= 0) (void)CardLock::from_fd(fd);
    else CardLock held(path);
    return "ok";
  } catch (const RtError& e) {
    return protocol_code(e.errc());
  }
}

// A child that inherits `fd` (fork keeps the description) and takes the lock on it: its exit code.
int child_takes(int fd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      CardLock l = CardLock::from_fd(fd);
      ::_exit(0);
    } catch (const RtError& e) {
      ::_exit(exit_code(e.errc()));
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int main() {
  char dir[] = "/tmp/graphrt-lock-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/card0.lock";
  const int shared = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
  const int other = ::open(path.c_str(), O_RDWR);
  REQUIRE(shared >= 0 && other >= 0);
  {
    // The worker's copy of the description; each rank process gets its own fd of it.
    CardLock first = CardLock::from_fd(::dup(shared));
    CHECK_EQ(child_takes(shared), 0);  // another process, same description: held together
    CardLock second = CardLock::from_fd(::dup(shared));
    CHECK_EQ(lock_once(-1, path), std::string("CARD_BUSY"));  // a fresh open: refused
    CHECK_EQ(lock_once(::dup(other)), std::string("CARD_BUSY"));
    CHECK_EQ(child_takes(other), 4);
    // The worker closes its copy: the ranks still hold the card.
    ::close(shared);
    CHECK_EQ(lock_once(-1, path), std::string("CARD_BUSY"));
  }
  // Every holder of the shared description gone: the card is free.
  CHECK_EQ(lock_once(-1, path), std::string("ok"));
  CHECK_EQ(lock_once(other), std::string("ok"));

  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  CHECK_EQ(lock_once(pipe_fds[0]), std::string("BAD_FLAG"));
  CHECK_EQ(lock_once(987), std::string("BAD_FLAG"));
  ::unlink(path.c_str());
  ::rmdir(dir);
  return finish("card_lock_test");
}
