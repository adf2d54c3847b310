// The CPU build's stand-in for NCCL: a sum over the gang's ranks through TCP sockets, set up the
// way an NCCL communicator is. Rank 0 listens and publishes its address through orch's exchange
// (orch_rank::exchange, as nccl_unique_id() publishes an NCCL id); every other rank receives it,
// connects and says its rank. sum() sends each rank's buffer to rank 0, which adds them in rank
// order and sends the total back, so every rank ends with the same bytes, step after step.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "orch_rank.h"

namespace cuda_tp {

// One socket, closed with its owner; move-only.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }
  int fd() const { return fd_; }

  void send_all(const void* data, std::size_t n) const {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t k = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) throw std::runtime_error(std::string("all-reduce: send: ") + std::strerror(errno));
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  }
  void recv_all(void* data, std::size_t n) const {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t k = ::recv(fd_, p, n, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k == 0) throw std::runtime_error("all-reduce: a peer closed its socket (did its rank end?)");
      if (k < 0) throw std::runtime_error(std::string("all-reduce: recv: ") + std::strerror(errno));
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  }

 private:
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_;
};

inline Socket tcp_socket() {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  if (s.fd() < 0) throw std::runtime_error(std::string("all-reduce: socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

class SocketAllreduce {
 public:
  // The exchange's key: one communicator per attempt (orch allows 16 exchanges per rank).
  static constexpr const char* kExchangeKey = "tp-allreduce";

  SocketAllreduce(int rank, int world) : rank_(rank), world_(world) {
    if (world_ == 1) return;
    if (rank_ == 0) {
      Socket listener = tcp_socket();
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = 0;  // the kernel's free port: MASTER_PORT is the program's own (torch's store would use it)
      if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener.fd(), world_) != 0)
        throw std::runtime_error(std::string("all-reduce: bind/listen: ") + std::strerror(errno));
      socklen_t len = sizeof a;
      ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&a), &len);
      const char* addr = std::getenv("MASTER_ADDR");
      orch_rank::exchange(kExchangeKey, std::string(addr == nullptr ? "127.0.0.1" : addr) + ":" + std::to_string(ntohs(a.sin_port)));
      peers_.resize(static_cast<std::size_t>(world_));
      for (int i = 1; i < world_; ++i) {
        Socket peer(::accept(listener.fd(), nullptr, nullptr));
        if (peer.fd() < 0) throw std::runtime_error(std::string("all-reduce: accept: ") + std::strerror(errno));
        int who = -1;
        peer.recv_all(&who, sizeof who);
        if (who < 1 || who >= world_ || peers_[static_cast<std::size_t>(who)].fd() >= 0)
          throw std::runtime_error("all-reduce: a peer said rank " + std::to_string(who));
        peers_[static_cast<std::size_t>(who)] = std::move(peer);
      }
    } else {
      const std::string where = orch_rank::exchange(kExchangeKey, "");
      const auto colon = where.rfind(':');
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(std::stoi(where.substr(colon + 1))));
      if (colon == std::string::npos || ::inet_pton(AF_INET, where.substr(0, colon).c_str(), &a.sin_addr) != 1)
        throw std::runtime_error("all-reduce: rank 0 published \"" + where + "\", not an IPv4 address:port");
      root_ = tcp_socket();
      if (::connect(root_.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        throw std::runtime_error("all-reduce: connect to " + where + ": " + std::strerror(errno));
      root_.send_all(&rank_, sizeof rank_);
    }
  }

  // buf (n floats) becomes the sum over ranks, the same bytes on every rank.
  void sum(float* buf, std::size_t n) {
    if (world_ == 1) return;
    const std::size_t bytes = n * sizeof(float);
    if (rank_ != 0) {
      root_.send_all(buf, bytes);
      root_.recv_all(buf, bytes);
      return;
    }
    scratch_.resize(n);
    for (int i = 1; i < world_; ++i) {
      peers_[static_cast<std::size_t>(i)].recv_all(scratch_.data(), bytes);
      for (std::size_t j = 0; j < n; ++j) buf[j] += scratch_[j];
    }
    for (int i = 1; i < world_; ++i) peers_[static_cast<std::size_t>(i)].send_all(buf, bytes);
  }

 private:
  int rank_;
  int world_;
  Socket root_;                // rank > 0: to rank 0
  std::vector<Socket> peers_;  // rank 0: from each rank, by rank
  std::vector<float> scratch_;
};

}  // namespace cuda_tp
