#include "rendezvous.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "graphrt/error.hpp"

namespace graphrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x56524752;  // "GRRV"
// kHello is followed by the kRendezvousSecretBytes secret (zero-padded).
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

// Where rank 0 listens: a Unix socket path, or a TCP host and port (`tcp://HOST:PORT`).
struct Endpoint {
  bool tcp = false;
  std::string path;  // unix
  std::string host;  // tcp
  std::string port;  // tcp
  std::string text;  // as given, for messages
};

Endpoint parse_endpoint(const std::string& address) {
  Endpoint e;
  e.text = address;
  if (address.rfind("tcp://", 0) == 0) {
    const std::string hp = address.substr(6);
    const auto colon = hp.rfind(':');
    e.tcp = true;
    if (colon != std::string::npos) {
      e.host = hp.substr(0, colon);
      e.port = hp.substr(colon + 1);
    }
    if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
    if (e.host.empty() || e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos)
      throw RtError(Errc::BadFlag, "BAD_FLAG", "--rendezvous \"" + address + "\": expected tcp://HOST:PORT (PORT 0: an ephemeral port)");
    return e;
  }
  if (address.empty() || address.size() >= sizeof(sockaddr_un::sun_path))
    throw RtError(Errc::BadFlag, "BAD_FLAG",
                  "--rendezvous: a socket path of 1.." + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                      " bytes or tcp://HOST:PORT, got " + std::to_string(address.size()) + " bytes (\"" + address + "\")");
  e.path = address;
  return e;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
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

// The all-reduce is a ping-pong of small frames: Nagle's delay would add to every step.
void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

// getaddrinfo of a tcp endpoint; the error names the address.
void resolve(const Endpoint& e, bool passive, AddrInfo& out, const std::string& me) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const int rc = ::getaddrinfo(e.host.c_str(), e.port.c_str(), &hints, &out.list);
  if (rc != 0 || out.list == nullptr)
    rank_lost(me + ": cannot resolve the rendezvous address " + e.text + ": " + ::gai_strerror(rc));
}

// The `HOST:PORT` a tcp listener is reachable at (the host as given, the port as bound).
std::string bound_address(int listener, const Endpoint& e) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&ss), &len);
  const int port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                            : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(port);
}

// Writes `text` to `path` whole or not at all (a reader polling for it never sees half of it).
void publish_file(const std::string& path, const std::string& text, const std::string& me) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  const bool ok = f != nullptr && std::fputs((text + "\n").c_str(), f) >= 0;
  if (f != nullptr && std::fclose(f) != 0) rank_lost(me + ": cannot write " + tmp + ": " + std::strerror(errno));
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    rank_lost(me + ": cannot publish the rendezvous address to " + path + ": " + std::strerror(errno));
}

// Rank 0's listener on the endpoint (a tcp one is published once bound).
int listen_on(const Endpoint& e, int world, const RendezvousAuth& auth, const std::string& me) {
  if (!e.tcp) {
    const sockaddr_un addr = unix_address(e.path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, world) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      rank_lost(me + ": cannot listen on the rendezvous socket " + e.path + ": " + why +
                " (the path must not exist: one fresh path per block attempt)");
    }
    return fd;
  }
  AddrInfo ai;
  resolve(e, true, ai, me);
  std::string why = "no address";
  for (addrinfo* a = ai.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, world) == 0) {
      if (!auth.publish.empty()) publish_file(auth.publish, bound_address(fd, e), me);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  rank_lost(me + ": cannot listen on the rendezvous address " + e.text + ": " + why);
}

// One attempt to reach rank 0; -1 with `err` set when it is not there (yet).
int connect_once(const Endpoint& e, int& err, const std::string& me) {
  if (!e.tcp) {
    const sockaddr_un addr = unix_address(e.path);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) rank_lost(me + ": socket(): " + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    err = errno;
    ::close(fd);
    return -1;
  }
  AddrInfo ai;
  resolve(e, false, ai, me);
  for (addrinfo* a = ai.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      no_delay(fd);
      return fd;
    }
    err = errno;
    ::close(fd);
  }
  return -1;
}

// Who knocked (for the log of a refused connection): the peer's address, never what it sent.
std::string peer_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST] = "";
  char port[NI_MAXSERV] = "";
  if (ss.ss_family == AF_UNIX) return "a local process";
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return std::string(host) + ":" + port;
}

using Secret = std::array<char, kRendezvousSecretBytes>;

Secret secret_of(const RendezvousAuth& auth) {
  if (auth.secret.size() > kRendezvousSecretBytes)
    throw RtError(Errc::BadFlag, "BAD_FLAG", "the rendezvous secret holds at most " + std::to_string(kRendezvousSecretBytes) + " bytes");
  Secret s{};
  std::memcpy(s.data(), auth.secret.data(), auth.secret.size());
  return s;
}

// Constant time: how long the comparison takes says nothing about how much of a guess was right.
bool same_secret(const Secret& a, const Secret& b) {
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A hello is the frame header, then the secret: a fixed size, so nothing a peer says before it is
// authenticated sizes a read.
constexpr std::size_t kHelloBytes = sizeof(Frame) + kRendezvousSecretBytes;
// A rank sends its hello the moment it connects: a connection whose hello is not whole this long
// after it was accepted (or by the rendezvous deadline, if sooner) is dropped.
constexpr std::chrono::milliseconds kHelloWithin{5000};
// Connections saying hello at one time; a newer one drops the oldest, so a flood of idle
// connections can exhaust neither rank 0's descriptors nor its patience with an honest rank.
constexpr std::size_t kMaxPendingHellos = 64;

// Reads `n` bytes unless the peer closes, fails or `deadline` passes first: a poll before every
// recv, so a peer that sends part of a frame and stalls holds the reader no longer than that.
bool read_all_before(int fd, void* data, std::size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    if (!readable_before(fd, deadline)) return false;
    const ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// An authenticated hello: the connection (blocking, now the caller's) and what it claims.
struct Hello {
  int fd;
  std::uint64_t world;
  std::uint64_t rank;
};

// Rank 0's door: accepts connections and reads their hellos side by side, in one poll over the
// listener and every connection still saying hello, so no connection, however slow, holds up
// another. A connection is dropped (closed and logged with its address, never what it sent) when
// it is not speaking the protocol, presents a wrong secret, closes, or has not sent its whole
// hello within kHelloWithin.
class HelloGate {
 public:
  HelloGate(int listener, const Secret& secret, Clock::time_point deadline, std::string me)
      : listener_(listener), secret_(secret), deadline_(deadline), me_(std::move(me)) {
    // A connection reset between poll and accept must not block accept.
    ::fcntl(listener_, F_SETFL, ::fcntl(listener_, F_GETFL) | O_NONBLOCK);
  }
  ~HelloGate() {
    for (const Pending& p : pending_) ::close(p.fd);
  }
  HelloGate(const HelloGate&) = delete;
  HelloGate& operator=(const HelloGate&) = delete;

  // The next authenticated hello; nullopt once the rendezvous deadline has passed.
  std::optional<Hello> next() {
    for (;;) {
      const auto now = Clock::now();
      auto wake = deadline_;
      for (std::size_t i = pending_.size(); i-- > 0;) {
        if (pending_[i].until <= now)
          drop(i, "stalled: " + std::to_string(pending_[i].got) + " of " + std::to_string(kHelloBytes) + " hello bytes within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - pending_[i].since).count()) + " ms");
        else
          wake = std::min(wake, pending_[i].until);
      }
      if (now >= deadline_) return std::nullopt;
      std::vector<pollfd> fds{pollfd{listener_, POLLIN, 0}};
      for (const Pending& p : pending_) fds.push_back(pollfd{p.fd, POLLIN, 0});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
      const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left));
      if (n < 0 && errno != EINTR) rank_lost(me_ + ": poll on the rendezvous: " + std::strerror(errno));
      if (n <= 0) continue;
      for (std::size_t i = pending_.size(); i-- > 0;)
        if (fds[i + 1].revents != 0)
          if (auto hello = read_from(i)) return hello;
      if ((fds[0].revents & POLLIN) != 0) accept_one();
    }
  }

 private:
  struct Pending {
    int fd;
    Clock::time_point since;
    Clock::time_point until;
    std::array<char, kHelloBytes> bytes{};
    std::size_t got = 0;
  };

  void accept_one() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    if (pending_.size() >= kMaxPendingHellos)
      drop(0, "dropped for a newer one: " + std::to_string(kMaxPendingHellos) + " connections were saying hello at once");
    const auto now = Clock::now();
    pending_.push_back(Pending{fd, now, std::min(deadline_, now + kHelloWithin)});
  }

  // Reads what connection `i` has sent; its hello once whole and ours (it leaves the gate then).
  std::optional<Hello> read_from(std::size_t i) {
    Pending& p = pending_[i];
    const ssize_t r = ::recv(p.fd, p.bytes.data() + p.got, kHelloBytes - p.got, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    if (r <= 0) {
      drop(i, "closed after " + std::to_string(p.got) + " of " + std::to_string(kHelloBytes) + " hello bytes");
      return std::nullopt;
    }
    p.got += static_cast<std::size_t>(r);
    if (p.got >= 2 * sizeof(std::uint32_t)) {  // magic and op: a stranger is dropped before it sends more
      std::uint32_t head[2];
      std::memcpy(head, p.bytes.data(), sizeof head);
      if (head[0] != kMagic || head[1] != kHello) {
        drop(i, "not a rendezvous hello");
        return std::nullopt;
      }
    }
    if (p.got < kHelloBytes) return std::nullopt;
    Frame f;
    std::memcpy(&f, p.bytes.data(), sizeof f);
    Secret presented{};
    std::memcpy(presented.data(), p.bytes.data() + sizeof f, presented.size());
    if (!same_secret(presented, secret_)) {
      // Logged without what was presented: a near miss must not teach the secret.
      drop(i, "claiming rank " + std::to_string(f.b) + ": wrong secret");
      return std::nullopt;
    }
    const Hello hello{p.fd, f.a, f.b};
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    return hello;
  }

  void drop(std::size_t i, const std::string& why) {
    std::fprintf(stderr, "graphrt %s: refused a rendezvous connection from %s: %s\n", me_.c_str(), peer_of(pending_[i].fd).c_str(),
                 why.c_str());
    std::fflush(stderr);
    ::close(pending_[i].fd);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  int listener_;
  Secret secret_;
  Clock::time_point deadline_;
  std::string me_;
  std::vector<Pending> pending_;
};

}  // namespace

Rendezvous::Rendezvous(const std::string& address, int world, int rank, std::chrono::milliseconds timeout,
                       const RendezvousBlob& blob, const RendezvousAuth& auth)
    : world_(world), rank_(rank) {
  const Endpoint ep = parse_endpoint(address);
  const Secret secret = secret_of(auth);
  const auto deadline = Clock::now() + timeout;
  const std::string me = "rank " + std::to_string(rank) + " of " + std::to_string(world);
  auto stop_listening = [&](int listener) {
    ::close(listener);
    if (!ep.tcp) ::unlink(ep.path.c_str());
  };
  if (rank == 0) {
    blob_ = blob;
    fds_.assign(static_cast<std::size_t>(world), -1);
    const int listener = listen_on(ep, world, auth, me);
    try {
      HelloGate gate(listener, secret, deadline, me);
      for (int joined = 1; joined < world;) {
        const auto hello = gate.next();
        if (!hello) {
          rank_lost(me + ": rank(s) " + missing_ranks(fds_) + " did not reach the rendezvous " + ep.text + " within " +
                    std::to_string(timeout.count()) + " ms");
        }
        const auto r = static_cast<std::int64_t>(hello->rank);
        if (hello->world != static_cast<std::uint64_t>(world) || r <= 0 || r >= world || fds_[static_cast<std::size_t>(r)] >= 0) {
          ::close(hello->fd);
          throw RtError(Errc::BadFlag, "BAD_FLAG",
                        me + ": a process joined the rendezvous as rank " + std::to_string(r) + " of " +
                            std::to_string(hello->world) + ": --world and --rank must make one gang (each rank once)");
        }
        if (ep.tcp) no_delay(hello->fd);
        fds_[static_cast<std::size_t>(r)] = hello->fd;
        ++joined;
      }
    } catch (...) {
      stop_listening(listener);
      for (int& fd : fds_)
        if (fd >= 0) ::close(std::exchange(fd, -1));
      throw;
    }
    stop_listening(listener);
    for (int r = 1; r < world; ++r)
      if (!send_frame(fds_[static_cast<std::size_t>(r)], kWelcome, 0, blob_.size(), blob_.data(), blob_.size()))
        lost(r, "closed its connection during the rendezvous");
    return;
  }
  int fd = -1;
  for (;;) {  // rank 0 may not be listening yet
    int err = 0;
    fd = connect_once(ep, err, me);
    if (fd >= 0) break;
    const bool not_yet = err == ENOENT || err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH || err == ETIMEDOUT;
    if (!not_yet || Clock::now() >= deadline)
      rank_lost(me + ": cannot reach rank 0 at the rendezvous " + ep.text + " within " + std::to_string(timeout.count()) +
                " ms: " + std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fds_.push_back(fd);
  Frame welcome;
  if (!send_frame(fd, kHello, static_cast<std::uint64_t>(world), static_cast<std::uint64_t>(rank), secret.data(), secret.size()) ||
      !read_all_before(fd, &welcome, sizeof welcome, deadline))
    lost(0, "closed the rendezvous, or sent no welcome within " + std::to_string(timeout.count()) +
                " ms (a rank never came, rank 0 died, or it refused this rank's secret)");
  if (welcome.magic != kMagic || welcome.op != kWelcome || welcome.b != blob_.size() ||
      !read_all_before(fd, blob_.data(), blob_.size(), deadline))
    lost(0, "sent a malformed or partial welcome");
}

Rendezvous::~Rendezvous() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void Rendezvous::abort_others(int lost_rank) noexcept {
  std::vector<pollfd> open;
  for (int r = 1; r < world_; ++r) {
    const int fd = fds_[static_cast<std::size_t>(r)];
    if (fd < 0) continue;
    if (r != lost_rank) send_frame(fd, kAbort, static_cast<std::uint64_t>(lost_rank), 0);
    ::shutdown(fd, SHUT_WR);  // a FIN after the abort: a peer reads the abort first, then EOF
    open.push_back(pollfd{fd, POLLIN, 0});
  }
  // This process exits next. Closing a socket with unread input (a peer's all-reduce frame that
  // arrived meanwhile) sends a reset, and a reset discards the abort still queued at the peer:
  // it would then blame rank 0 for the loss. So what the peers still send is read and dropped
  // until each closes (it exits on the abort), within a bound.
  const auto deadline = Clock::now() + std::chrono::milliseconds(300);
  std::array<char, 4096> sink{};
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    const int n = ::poll(open.data(), open.size(), static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::vector<pollfd> still;
    for (const pollfd& p : open) {
      bool closed = false;
      if (p.revents != 0) {
        const ssize_t got = ::recv(p.fd, sink.data(), sink.size(), MSG_DONTWAIT);
        closed = got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      }
      if (!closed) still.push_back(pollfd{p.fd, POLLIN, 0});
    }
    open.swap(still);
  }
}

void Rendezvous::lost(int peer, const std::string& what) {
  if (rank_ == 0) abort_others(peer);
  rank_lost("rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + " " + what);
}

std::optional<int> Rendezvous::hung_up_peer(std::chrono::milliseconds wait) const {
  std::vector<pollfd> fds;
  for (int fd : fds_) fds.push_back(pollfd{fd, POLLRDHUP, 0});  // fd -1 (rank 0's own slot): ignored
  for (;;) {
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    break;
  }
  for (std::size_t i = 0; i < fds.size(); ++i)
    if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return rank_ == 0 ? static_cast<int>(i) : 0;
  return std::nullopt;
}

std::optional<int> Rendezvous::abort_notice() const {
  if (rank_ == 0) return std::nullopt;
  // Rank 0 answers each call before the next one starts, so at most one result (and the abort
  // after it) lies unread: a peek of 64 KiB sees the abort unless a result is larger than that.
  std::vector<char> bytes(64 * 1024);
  const ssize_t got = ::recv(fds_[0], bytes.data(), bytes.size(), MSG_PEEK | MSG_DONTWAIT);
  std::size_t at = 0;
  while (got > 0 && at + sizeof(Frame) <= static_cast<std::size_t>(got)) {
    Frame f;
    std::memcpy(&f, bytes.data() + at, sizeof f);
    if (f.magic != kMagic) return std::nullopt;
    if (f.op == kAbort) return static_cast<int>(f.a);
    at += sizeof f + (f.op == kResult ? f.b * sizeof(float) : 0);
  }
  return std::nullopt;
}

void Rendezvous::tell_lost(int lost_rank, std::chrono::milliseconds wait) noexcept {
  if (rank_ != 0) return;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (lock.try_lock_for(wait)) abort_others(lost_rank);
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
