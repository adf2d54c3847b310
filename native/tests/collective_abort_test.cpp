// The collective's watchdog (collective.hpp), with real processes (it ends the process, so ranks
// are forked children): while a request is in flight a rank whose peer is killed exits RANK_LOST
// (7) within a second naming the lost rank, also when it is stuck where no read would see the
// socket close (an NCCL kernel waiting on the GPU; here a sleep inside Busy), and it calls the
// collective's abort hook first; rank 0 tells a rank that was not connected to the dead one; a
// peer that leaves between requests is no failure until the next request; the library's
// asynchronous error ends the rank as well.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.hpp"
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;
using Clock = std::chrono::steady_clock;

namespace {

int report_fd = -1;  // the child's end of its pipe to the test

void say(const std::string& text) {
  const std::string line = text + "\n";
  if (::write(report_fd, line.data(), line.size()) < 0) std::_Exit(90);
}

void report_fatal(const RtError& e) { say(std::string("fatal ") + protocol_code(e.errc()) + " " + e.what()); }

// A collective whose hooks the test sees: the abort is reported, the async error can be planted.
class WatchedCollective final : public Collective {
 public:
  WatchedCollective(Backend& b, std::unique_ptr<Rendezvous> rv, Clock::time_point fail_at)
      : Collective(b, std::move(rv)), fail_at_(fail_at) {
    start_watchdog();
  }
  ~WatchedCollective() override { stop_watchdog(); }
  void all_reduce_sum(StreamRaw, float*, std::size_t) override {}
  std::optional<std::size_t> nodes_per_call() const override { return 0; }

 protected:
  std::optional<std::string> async_error() noexcept override {
    if (Clock::now() < fail_at_) return std::nullopt;
    return std::string("planted asynchronous error");
  }
  void abort_in_flight() noexcept override { say("aborted"); }

 private:
  Clock::time_point fail_at_;
};

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end: the child's lines
  std::string text;
};

// Forks one rank: it joins the rendezvous, says "ready", then runs `body` (which should not return).
Child spawn(const std::string& path, int world, int rank, const std::function<void(Collective&)>& body,
            Clock::time_point fail_at = Clock::time_point::max()) {
  int p[2];
  if (::pipe(p) != 0) std::abort();
  std::fflush(nullptr);  // else the child's exit path flushes the test's buffered lines again
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    report_fd = p[1];
    set_collective_fatal(&report_fatal);
    auto backend = make_cpu_backend();
    auto rv = std::make_unique<Rendezvous>(path, world, rank, std::chrono::milliseconds(10000), RendezvousBlob{});
    WatchedCollective c(*backend, std::move(rv), fail_at);
    say("ready");
    body(c);
    say("returned");
    std::_Exit(0);
  }
  ::close(p[1]);
  return Child{pid, p[0], ""};
}

// Reads the child's lines until `want` appears (or its pipe closes).
bool wait_line(Child& c, const std::string& want) {
  char buf[512];
  while (c.text.find(want) == std::string::npos) {
    const ssize_t n = ::read(c.out, buf, sizeof buf);
    if (n <= 0) return false;
    c.text.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

// Waits for the child's exit: its exit code (128 + signal when killed) and ms since `t0`.
std::pair<int, long> wait_exit(Child& c, Clock::time_point t0) {
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  wait_line(c, "\x01");  // the rest of its lines, up to EOF
  ::close(c.out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ms};
}

void stuck_in_request(Collective& c) {
  const auto busy = c.busy();
  say("busy");
  std::this_thread::sleep_for(std::chrono::seconds(10));  // a collective that never completes
}

void idle_forever(Collective&) { std::this_thread::sleep_for(std::chrono::seconds(30)); }

// Generous against a loaded CI machine; the bound the issue asks is one second.
constexpr long kBoundMs = 1000;

}  // namespace

int main() {
  {  // world 2: rank 1 killed while rank 0 is stuck in a request
    const FreshSocket sock;
    Child r0 = spawn(sock.path, 2, 0, stuck_in_request);
    Child r1 = spawn(sock.path, 2, 1, idle_forever);
    CHECK(wait_line(r0, "busy") && wait_line(r1, "ready"));
    const auto t0 = Clock::now();
    ::kill(r1.pid, SIGKILL);
    wait_exit(r1, t0);
    const auto [code, ms] = wait_exit(r0, t0);
    std::printf("# world 2: rank 1 killed, rank 0 exited %d after %ld ms\n", code, ms);
    CHECK_EQ(code, 7);
    CHECK(ms < kBoundMs);
    CHECK(r0.text.find("aborted\nfatal RANK_LOST rank 0: rank 1 closed its connection") != std::string::npos);
  }
  {  // world 3: rank 2 killed; rank 1 (connected only to rank 0) is told which rank was lost
    const FreshSocket sock;
    Child r0 = spawn(sock.path, 3, 0, stuck_in_request);
    Child r1 = spawn(sock.path, 3, 1, stuck_in_request);
    Child r2 = spawn(sock.path, 3, 2, idle_forever);
    CHECK(wait_line(r0, "busy") && wait_line(r1, "busy") && wait_line(r2, "ready"));
    const auto t0 = Clock::now();
    ::kill(r2.pid, SIGKILL);
    wait_exit(r2, t0);
    const auto [c0, ms0] = wait_exit(r0, t0);
    const auto [c1, ms1] = wait_exit(r1, t0);
    std::printf("# world 3: rank 2 killed, rank 0 exited %d after %ld ms, rank 1 %d after %ld ms\n", c0, ms0, c1, ms1);
    CHECK_EQ(c0, 7);
    CHECK_EQ(c1, 7);
    CHECK(ms0 < kBoundMs && ms1 < kBoundMs);
    CHECK(r0.text.find("rank 2 closed its connection") != std::string::npos);
    CHECK(r1.text.find("fatal RANK_LOST rank 1: the gang lost rank 2") != std::string::npos);
  }
  {  // a peer that leaves between requests: no failure then; the next request ends the rank
    const FreshSocket sock;
    Child r0 = spawn(sock.path, 2, 0, [](Collective& c) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));  // idle while rank 1 leaves
      say("idle survived");
      stuck_in_request(c);
    });
    Child r1 = spawn(sock.path, 2, 1, [](Collective&) {});  // returns at once: exits 0
    const auto t0 = Clock::now();
    const auto [c1, ms1] = wait_exit(r1, t0);
    CHECK_EQ(c1, 0);
    const auto [c0, ms0] = wait_exit(r0, t0);
    std::printf("# rank 1 left between requests; rank 0 exited %d after %ld ms (400 ms idle first)\n", c0, ms0);
    CHECK(r0.text.find("idle survived\nbusy\naborted\nfatal RANK_LOST rank 0: rank 1 closed") != std::string::npos);
    CHECK_EQ(c0, 7);
    CHECK(ms0 < 400 + kBoundMs);
  }
  {  // the library's asynchronous error (NCCL: ncclCommGetAsyncError) while a request is in flight
    const FreshSocket sock;
    const auto fail_at = Clock::now() + std::chrono::milliseconds(300);
    Child r0 = spawn(sock.path, 2, 0, stuck_in_request, fail_at);
    Child r1 = spawn(sock.path, 2, 1, idle_forever);
    CHECK(wait_line(r0, "busy"));
    const auto [c0, ms0] = wait_exit(r0, fail_at);
    ::kill(r1.pid, SIGKILL);
    wait_exit(r1, fail_at);
    std::printf("# planted async error: rank 0 exited %d after %ld ms\n", c0, ms0);
    CHECK_EQ(c0, 7);
    CHECK(ms0 < kBoundMs);
    CHECK(r0.text.find("aborted\nfatal RANK_LOST rank 0: the collective failed: planted asynchronous error") != std::string::npos);
  }
  return finish("collective_abort_test");
}
