#include "context.hpp"

namespace graphrt {

Context::Context(Backend& b)
    : backend(b),
      compute(b.compute_stream()),
      side_(make_stream(b)),
      fork_ev_(make_event(b)),
      join_ev_(make_event(b)) {}

void Context::fork() {
  if (!overlap) return;
  backend.event_record(fork_ev_.get(), compute);
  backend.stream_wait_event(side_.get(), fork_ev_.get());
}

void Context::join() {
  if (!overlap) return;
  backend.event_record(join_ev_.get(), side_.get());
  backend.stream_wait_event(compute, join_ev_.get());
}

void Context::replay(GraphExecRaw exec) {
  backend.graph_launch(exec, compute);
  ++dispatches;
}

}  // namespace graphrt
