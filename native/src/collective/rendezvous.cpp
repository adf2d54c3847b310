#include "rendezvous.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "graphrt/error.hpp"

namespace graphrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x56524752;  // "GRRV"
enum Op : std::uint32_t { kHello = 1, kWelcome = 2, kReduce = 3, kResult = 4, kAbort = 5 };

// Every message: this header, then `b` payload elements (floats, or blob bytes for kWelcome).
struct Frame {
  std::uint32_t magic = kMagic;
  std::uint32_t op = 0;
  std::uint64_t a = 0;  // hello: world; reduce/result: sequence number; abort: the lost rank
  std::uint64_t b = 0;  // hello: rank; reduce/result: element count; welcome: blob bytes
};

bool write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);  // a dead peer is an error, not SIGPIPE
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// False on EOF or a socket error (the peer is gone).
bool read_all(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool send_frame(int fd, Op op, std::uint64_t a, std::uint64_t b, const void* payload = nullptr,
                std::size_t bytes = 0) {
  Frame f;
  f.op = op;
  f.a = a;
  f.b = b;
  return write_all(fd, &f, sizeof f) && (bytes == 0 || write_all(fd, payload, bytes));
}

// Waits until `fd` is readable or the deadline passes.
bool readable_before(int fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

sockaddr_un address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    throw RtError(Errc::BadFlag, "BAD_FLAG",
                  "--rendezvous: a socket path of 1.." + std::to_string(sizeof(addr.sun_path) - 1) +
                      " bytes, got " + std::to_string(path.size()) + " (\"" + path + "\")");
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

[[noreturn]] void rank_lost(const std::string& message) { throw RtError(Errc::RankLost, "RANK_LOST", message); }

std::string missing_ranks(const std::vector<int>& fds) {
  std::string out;
  for (std::size_t r = 1; r < fds.size(); ++r)
    if (fds[r] < 0) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

Rendezvous::Rendezvous(const std::string& path, int world, int rank, std::chrono::milliseconds timeout,
                       const RendezvousBlob& blob)
    : world_(world), rank_(rank) {
  const sockaddr_un addr = address(path);
  const auto deadline = Clock::now() + timeout;
  const std::string me = "rank " + std::to_string(rank) + " of " + std::to_string(world);
  if (rank == 0) {
    blob_ = blob;
    fds_.assign(static_cast<std::size_t>(world), -1);
    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || ::bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, world) != 0) {
      const std::string why = std::strerror(errno);
      if (listener >= 0) ::close(listener);
      rank_lost(me + ": cannot listen on the rendezvous socket " + path + ": " + why +
                " (the path must not exist: one fresh path per block attempt)");
    }
    int joined = 1;
    while (joined < world) {
      if (!readable_before(listener, deadline)) {
        ::close(listener);
        ::unlink(path.c_str());
        rank_lost(me + ": rank(s) " + missing_ranks(fds_) + " did not reach the rendezvous " + path + " within " +
                  std::to_string(timeout.count()) + " ms");
      }
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Frame hello;
      if (!readable_before(fd, deadline) || !read_all(fd, &hello, sizeof hello) || hello.magic != kMagic ||
          hello.op != kHello) {
        ::close(fd);  // not one of ours, or it died while saying hello: its rank stays missing
        continue;
      }
      const auto r = static_cast<std::int64_t>(hello.b);
      if (hello.a != static_cast<std::uint64_t>(world) || r <= 0 || r >= world || fds_[static_cast<std::size_t>(r)] >= 0) {
        ::close(fd);
        ::close(listener);
        ::unlink(path.c_str());
        throw RtError(Errc::BadFlag, "BAD_FLAG",
                      me + ": a process joined the rendezvous as rank " + std::to_string(r) + " of " +
                          std::to_string(hello.a) + ": --world and --rank must make one gang (each rank once)");
      }
      fds_[static_cast<std::size_t>(r)] = fd;
      ++joined;
    }
    ::close(listener);
    ::unlink(path.c_str());
    for (int r = 1; r < world; ++r)
      if (!send_frame(fds_[static_cast<std::size_t>(r)], kWelcome, 0, blob_.size(), blob_.data(), blob_.size()))
        lost(r, "closed its connection during the rendezvous");
    return;
  }
  int fd = -1;
  for (;;) {  // rank 0 may not be listening yet
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) rank_lost(me + ": socket(): " + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) break;
    const int err = errno;
    ::close(fd);
    if ((err != ENOENT && err != ECONNREFUSED) || Clock::now() >= deadline)
      rank_lost(me + ": cannot reach rank 0 at the rendezvous " + path + " within " + std::to_string(timeout.count()) +
                " ms: " + std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fds_.push_back(fd);
  Frame welcome;
  if (!send_frame(fd, kHello, static_cast<std::uint64_t>(world), static_cast<std::uint64_t>(rank)) ||
      !readable_before(fd, deadline) || !read_all(fd, &welcome, sizeof welcome))
    lost(0, "closed the rendezvous before every rank had joined (a rank never came, or rank 0 died)");
  if (welcome.magic != kMagic || welcome.op != kWelcome || welcome.b != blob_.size() ||
      !read_all(fd, blob_.data(), blob_.size()))
    lost(0, "sent a malformed welcome");
}

Rendezvous::~Rendezvous() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void Rendezvous::abort_others(int lost_rank) noexcept {
  for (int r = 1; r < world_; ++r)
    if (r != lost_rank && fds_[static_cast<std::size_t>(r)] >= 0)
      send_frame(fds_[static_cast<std::size_t>(r)], kAbort, static_cast<std::uint64_t>(lost_rank), 0);
}

void Rendezvous::lost(int peer, const std::string& what) {
  if (rank_ == 0) abort_others(peer);
  rank_lost("rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + " " + what);
}

void Rendezvous::all_reduce_sum(float* buf, std::size_t count) {
  std::lock_guard lock(mutex_);
  const std::uint64_t seq = ++seq_;
  const std::size_t bytes = count * sizeof(float);
  auto check = [&](const Frame& f, int peer, Op want) {
    if (f.magic == kMagic && f.op == kAbort)
      rank_lost("rank " + std::to_string(rank_) + ": the gang lost rank " + std::to_string(f.a) +
                " (rank 0 saw its connection close)");
    if (f.magic != kMagic || f.op != want || f.a != seq || f.b != count)
      throw RtError(Errc::Internal, "INTERNAL",
                    "rank " + std::to_string(rank_) + ": all-reduce " + std::to_string(seq) + " of " +
                        std::to_string(count) + " floats met rank " + std::to_string(peer) + "'s call " +
                        std::to_string(f.a) + " of " + std::to_string(f.b) +
                        ": the ranks are out of step (every rank must make the same collective calls)");
  };
  if (rank_ == 0) {
    scratch_.resize(count);
    for (int r = 1; r < world_; ++r) {
      const int fd = fds_[static_cast<std::size_t>(r)];
      Frame f;
      if (!read_all(fd, &f, sizeof f)) lost(r, "closed its connection (it exited or was killed)");
      check(f, r, kReduce);
      if (!read_all(fd, scratch_.data(), bytes)) lost(r, "closed its connection (it exited or was killed)");
      for (std::size_t i = 0; i < count; ++i) buf[i] += scratch_[i];  // rank order: deterministic
    }
    for (int r = 1; r < world_; ++r)
      if (!send_frame(fds_[static_cast<std::size_t>(r)], kResult, seq, count, buf, bytes))
        lost(r, "closed its connection (it exited or was killed)");
    return;
  }
  const int fd = fds_[0];
  Frame f;
  if (!send_frame(fd, kReduce, seq, count, buf, bytes) || !read_all(fd, &f, sizeof f))
    lost(0, "closed its connection (it exited or was killed)");
  check(f, 0, kResult);
  if (!read_all(fd, buf, bytes)) lost(0, "closed its connection (it exited or was killed)");
}

}  // namespace graphrt
