// The rendezvous of the ranks of one block (PROTOCOL.md "Multi-rank"): a star of stream sockets.
// ADDRESS is a Unix socket path (one host's gang: the path must not exist; the worker makes a
// fresh directory per block attempt) or `tcp://HOST:PORT` (a gang across hosts: rank 0 listens on
// HOST, port 0 meaning an ephemeral one, and writes `HOST:PORT` to `publish` for its worker to
// hand to the other hosts' ranks). Every other rank connects and says who it is, presenting the
// attempt's secret; a connection with a wrong secret, or one that stalls or garbles its hello, is
// refused and logged (never the secret) and rank 0 goes on waiting, reading the other hellos
// meanwhile: no connection delays another or the deadline. Once all `world` ranks are in, rank 0 closes the listener and sends each
// one its 128-byte blob (the NCCL unique id where NCCL is used). The constructor returns on every
// rank only then: it is the barrier before the first rep.
//
// all_reduce_sum is the host-side collective every backend can use (the CPU backend's collective,
// and the capture vote on every backend): ranks send their buffer to rank 0, which sums them in
// rank order ((b0 + b1) + b2) + ... and sends the one result back, so every rank holds the same
// bits, run after run. Calls must be made in the same order on every rank (a sequence number and
// the element count are checked). A peer that closes its socket (it died) is RankLost at once;
// rank 0 tells the survivors which rank it lost before it gives up.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace graphrt {

inline constexpr std::size_t kRendezvousBlobBytes = 128;  // NCCL_UNIQUE_ID_BYTES
using RendezvousBlob = std::array<std::byte, kRendezvousBlobBytes>;
// The secret every rank presents in its hello (the worker gives each rank the same one).
inline constexpr std::size_t kRendezvousSecretBytes = 64;

struct RendezvousAuth {
  std::string secret;   // at most kRendezvousSecretBytes; empty: no secret (a test's own ranks)
  std::string publish;  // rank 0 over tcp: the file it writes `HOST:PORT` to once listening
};

class Rendezvous {
 public:
  // Blocks until all ranks are connected or `timeout` passes (RtError RankLost naming the
  // missing ranks). `blob` is rank 0's, broadcast to all; other ranks pass anything.
  Rendezvous(const std::string& address, int world, int rank, std::chrono::milliseconds timeout,
             const RendezvousBlob& blob, const RendezvousAuth& auth = {});
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int world() const { return world_; }
  int rank() const { return rank_; }
  const RendezvousBlob& blob() const { return blob_; }

  // In place; blocking; thread-safe (one call at a time). Throws RtError(RankLost) when a peer is
  // gone, RtError(Internal) when the ranks are out of step.
  void all_reduce_sum(float* buf, std::size_t count);

  // The watchdog's view (Collective's watchdog thread, collective.cpp): none of these consumes a
  // byte of the stream, so they never race all_reduce_sum for a frame.
  // Waits up to `wait` for a peer's connection to hang up (it exited or was killed); its rank.
  std::optional<int> hung_up_peer(std::chrono::milliseconds wait) const;
  // Rank > 0: the lost rank named by an abort frame rank 0 left unread on its connection.
  std::optional<int> abort_notice() const;
  // Rank 0: tells the other ranks which rank was lost. Skipped while an all-reduce holds the
  // connections past `wait` (a frame written into the middle of another garbles the stream): the
  // others then see rank 0's own connection close.
  void tell_lost(int lost_rank, std::chrono::milliseconds wait) noexcept;

 private:
  [[noreturn]] void lost(int peer, const std::string& what);
  void abort_others(int lost_rank) noexcept;

  int world_;
  int rank_;
  RendezvousBlob blob_{};
  std::vector<int> fds_;  // rank 0: fds_[r] is rank r's socket (fds_[0] = -1); others: fds_[0]
  std::uint64_t seq_ = 0;
  std::vector<float> scratch_;
  std::timed_mutex mutex_;
};

}  // namespace graphrt
