// graphrt: one process per rank, JSON lines on stdout (native/PROTOCOL.md).
//   graphrt run   [process options] [request flags]
//   graphrt serve [process options]
//   graphrt hello [process options]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "card_lock.hpp"
#include "graphrt/backends.hpp"
#include "graphrt/limits.hpp"
#include "graphrt/protocol_generated.h"
#include "lines.hpp"
#include "session.hpp"

namespace graphrt {
namespace {

// One fwrite per line: stdio locks the stream per call, so the final error line a device thread
// writes (collective_fatal) can never land inside a line the host thread is writing.
void emit_stdout(const std::string& s) {
  const std::string l = s + '\n';
  std::fwrite(l.data(), 1, l.size(), stdout);
  std::fflush(stdout);
}

long process_rank = 0;  // --rank, for messages

// The final error line: on stdout (the protocol stream) and on stderr (for humans and logs).
// A sticky device error names the rank it ended (the orchestrator sees many ranks' errors).
int fail(const std::optional<std::string>& id, const RtError& e) {
  const std::string l =
      e.errc() == Errc::DeviceError
          ? error_line(id, RtError(e.errc(), e.name(), "rank " + std::to_string(process_rank) + ": " + e.what()))
          : error_line(id, e);
  emit_stdout(l);
  std::fprintf(stderr, "%s\n", l.c_str());
  return exit_code(e.errc());
}

struct ProcessOptions {
  std::string backend = "auto";
  std::string card_lock;
  long card_lock_fd = -1;  // --card-lock-fd: inherited from the worker (card_lock.hpp)
  long world = 1;
  long rank = 0;
  std::string rendezvous;
  std::string rendezvous_publish;
  long rendezvous_timeout_ms = 30000;
  std::vector<std::string> rest;  // request flags (run only)
};

long rank_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0)
    user_error(Errc::BadFlag, flag + ": expected a non-negative integer, got \"" + text + "\"");
  return v;
}

ProcessOptions parse_process_options(const std::vector<std::string>& args) {
  ProcessOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name = a;
    std::optional<std::string> value;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (name != "--backend" && name != "--card-lock" && name != "--card-lock-fd" && name != "--world" && name != "--rank" &&
        name != "--rendezvous" && name != "--rendezvous-timeout-ms" && name != "--rendezvous-publish") {
      o.rest.push_back(a);
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) user_error(Errc::BadFlag, name + " needs a value");
      value = args[++i];
    }
    if (name == "--backend") o.backend = *value;
    else if (name == "--card-lock") o.card_lock = *value;
    else if (name == "--card-lock-fd") o.card_lock_fd = rank_number(name, *value);
    else if (name == "--world") o.world = rank_number(name, *value);
    else if (name == "--rendezvous") o.rendezvous = *value;
    else if (name == "--rendezvous-publish") o.rendezvous_publish = *value;
    else if (name == "--rendezvous-timeout-ms") o.rendezvous_timeout_ms = rank_number(name, *value);
    else o.rank = rank_number(name, *value);
  }
  if (!o.card_lock.empty() && o.card_lock_fd >= 0)
    user_error(Errc::BadFlag, "--card-lock and --card-lock-fd name the same lock: give one");
  if (o.world < 1 || o.rank >= o.world)
    user_error(Errc::BadFlag, "--rank " + std::to_string(o.rank) + " must be below --world " + std::to_string(o.world));
  if (o.world > 1 && o.rendezvous.empty())
    user_error(Errc::BadFlag, "--world " + std::to_string(o.world) +
                                  " needs --rendezvous PATH|tcp://HOST:PORT (the same for every rank of the gang)");
  if (o.world > limits::kWorld.max || o.rendezvous_timeout_ms < 1 || o.rendezvous_timeout_ms > 3600000)
    user_error(Errc::BadFlag, "--world is at most " + std::to_string(limits::kWorld.max) +
                                  " and --rendezvous-timeout-ms 1..3600000");
  return o;
}

// GRAPHRT_PLANT_LAZY_INIT_RANK=R: rank R (only) makes its workloads with lazy_init, so its
// captures fail (the planted bug of the capture vote's tests).
bool planted_lazy_init(long rank) {
  const char* v = std::getenv("GRAPHRT_PLANT_LAZY_INIT_RANK");
  return v != nullptr && *v != '\0' && std::to_string(rank) == v;
}

// The attempt's rendezvous secret comes in the environment, never on the command line (anyone on
// the host can read a command line); it is taken out of the environment at once.
std::string take_rendezvous_secret() {
  const char* v = std::getenv("GRAPHRT_RENDEZVOUS_SECRET");
  std::string s = v == nullptr ? "" : v;
  ::unsetenv("GRAPHRT_RENDEZVOUS_SECRET");
  return s;
}

// A collective that fails on a device thread: the final error line, then collective_fatal exits.
void fatal_from_device(const RtError& e) { fail(std::nullopt, e); }

RankSetup connect_ranks(Backend& backend, const ProcessOptions& o, bool connect) {
  RankSetup setup;
  setup.plant_lazy_init = planted_lazy_init(o.rank);
  if (o.world > 1 && connect) {
    set_collective_fatal(&fatal_from_device);
    setup.comm = connect_collective(backend, CollectiveOptions{o.rendezvous,
                                                               {take_rendezvous_secret(), o.rendezvous_publish},
                                                               static_cast<int>(o.world), static_cast<int>(o.rank),
                                                               static_cast<int>(o.rendezvous_timeout_ms)});
  }
  return setup;
}

int serve(Session& session) {
  std::string text;
  while (std::getline(std::cin, text)) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::optional<std::string> id;
    try {
      if (text.size() > GRAPHRT_LINE_MAX_BYTES)
        user_error(Errc::BadRequest, "a request line of " + std::to_string(text.size()) + " bytes, over the " +
                                         std::to_string(GRAPHRT_LINE_MAX_BYTES) + "-byte line limit");
      const json::Value v = json::parse(text);
      if (!request_id_of(v).empty()) id = request_id_of(v);
      const Request req = request_from_json(v);
      session.handle(req, emit_stdout);
    } catch (const RtError& e) {
      const int code = exit_code(e.errc());
      if (code == 2) {  // bad input: answer it and keep serving
        emit_stdout(error_line(id, e));
        continue;
      }
      return fail(id, e);
    } catch (const std::exception& e) {  // a bug: answered with the request's id, then exit 1
      return fail(id, RtError(Errc::Internal, "INTERNAL", std::string("unexpected: ") + e.what()));
    }
  }
  return 0;
}

int run(Session& session, const Request& req) {
  const auto gate = session.handle(req, emit_stdout, false);
  if (gate && !gate->pass)
    return fail(req.id, RtError(Errc::GateFailed, "GATE_FAILED",
                                "identity gate failed: first bad replay " + std::to_string(*gate->first_bad_replay) +
                                    " (arm \"" + req.arm + "\", workload " + req.workload + ")"));
  return 0;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<std::string> id;
  try {
    if (args.empty() || (args[0] != "run" && args[0] != "serve" && args[0] != "hello"))
      user_error(Errc::BadFlag, std::string("expected a mode: graphrt run|serve|hello [options]") +
                                    (args.empty() ? "" : ", got \"" + args[0] + "\""));
    const std::string mode = args[0];
    const ProcessOptions opts = parse_process_options({args.begin() + 1, args.end()});
    process_rank = opts.rank;
    std::optional<Request> req;
    if (mode == "run") {
      req = request_from_flags(opts.rest);
      id = req->id;
    } else if (!opts.rest.empty()) {
      user_error(Errc::BadFlag, "graphrt " + mode + " takes process options only, got \"" + opts.rest[0] + "\"");
    }
    std::unique_ptr<CardLock> lock;
    if (!opts.card_lock.empty()) lock = std::make_unique<CardLock>(opts.card_lock);
    if (opts.card_lock_fd >= 0) lock = std::make_unique<CardLock>(CardLock::from_fd(static_cast<int>(opts.card_lock_fd)));
    std::unique_ptr<Backend> backend = make_backend(opts.backend);
    // The rendezvous is the barrier: hello comes once every rank of the gang is connected.
    RankSetup ranks = connect_ranks(*backend, opts, mode != "hello");
    Session session(std::move(backend), std::move(ranks));
    emit_stdout(hello_line(session.info(), session.shard(), std::nullopt, mode == "hello"));
    if (mode == "serve") return serve(session);
    if (mode == "run") return run(session, *req);
    return 0;
  } catch (const RtError& e) {
    return fail(id, e);
  } catch (const std::exception& e) {
    return fail(id, RtError(Errc::Internal, "INTERNAL", std::string("unexpected: ") + e.what()));
  }
}

}  // namespace
}  // namespace graphrt

int main(int argc, char** argv) { return graphrt::main_impl(argc, argv); }
