#include "cpu_device.hpp"

namespace graphrt::cpu {

CpuStream::CpuStream(Device& device) : device_(device), thread_([this] { loop(); }) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard lock(device_.mutex);
    stop_ = true;
  }
  device_.changed.notify_all();
  thread_.join();
}

void CpuStream::submit(WorkItem item) {
  {
    std::lock_guard lock(device_.mutex);
    queue_.push_back(std::move(item));
    ++submitted_;
  }
  device_.changed.notify_all();
}

void CpuStream::wait_idle() {
  std::unique_lock lock(device_.mutex);
  device_.changed.wait(lock, [this] { return completed_ == submitted_; });
}

void CpuStream::loop() {
  for (;;) {
    WorkItem item;
    {
      std::unique_lock lock(device_.mutex);
      device_.changed.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    execute(item);
    {
      std::lock_guard lock(device_.mutex);
      ++completed_;
    }
    device_.changed.notify_all();
  }
}

void CpuStream::execute(const WorkItem& item) {
  if (const auto* call = std::get_if<KernelCall>(&item)) {
    call->run();
  } else if (const auto* rec = std::get_if<RecordItem>(&item)) {
    const auto now = Clock::now();
    std::lock_guard lock(device_.mutex);
    // A later record may have been enqueued already; only the newest completion counts.
    if (rec->generation > rec->event->completed) {
      rec->event->completed = rec->generation;
      rec->event->stamp = now;
    }
  } else if (const auto* wait = std::get_if<WaitItem>(&item)) {
    std::unique_lock lock(device_.mutex);
    device_.changed.wait(lock, [wait] { return wait->event->completed >= wait->generation; });
  } else if (const auto* graph = std::get_if<GraphItem>(&item)) {
    for (const GraphNode& node : graph->exec->nodes) node.call.run();
  }
}

}  // namespace graphrt::cpu
