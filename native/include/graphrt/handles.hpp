// Move-only RAII owners of backend handles, and the CaptureGuard. Each wrapper holds the Backend
// it came from and destroys its handle exactly once (destructors never throw).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "graphrt/backend.hpp"

namespace graphrt {

template <class Raw, void (Backend::*Destroy)(Raw) noexcept>
class Handle {
 public:
  Handle() = default;
  Handle(Backend& backend, Raw raw) : backend_(&backend), raw_(raw) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept
      : backend_(other.backend_), raw_(std::exchange(other.raw_, Raw{})) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = other.backend_;
      raw_ = std::exchange(other.raw_, Raw{});
    }
    return *this;
  }
  ~Handle() { reset(); }

  Raw get() const noexcept { return raw_; }
  explicit operator bool() const noexcept { return raw_ != Raw{}; }
  void reset() noexcept {
    if (raw_ != Raw{}) (backend_->*Destroy)(std::exchange(raw_, Raw{}));
  }

 private:
  Backend* backend_ = nullptr;
  Raw raw_{};
};

using Stream = Handle<StreamRaw, &Backend::stream_destroy>;
using Event = Handle<EventRaw, &Backend::event_destroy>;
using Graph = Handle<GraphRaw, &Backend::graph_destroy>;
using GraphExec = Handle<GraphExecRaw, &Backend::exec_destroy>;

inline Stream make_stream(Backend& b) { return Stream(b, b.stream_create()); }
inline Event make_event(Backend& b) { return Event(b, b.event_create()); }

// Device memory of `count` elements of T.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, std::size_t count)
      : backend_(&backend), ptr_(static_cast<T*>(backend.alloc(count * sizeof(T)))), count_(count) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : backend_(o.backend_), ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  T* get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  // The buffer's bytes on the host (a synchronous copy: waits for the device; not in a capture).
  std::vector<std::byte> to_host_bytes() const {
    std::vector<std::byte> out(bytes());
    backend_->memcpy_d2h(out.data(), ptr_, bytes());
    return out;
  }
  void reset() noexcept {
    if (ptr_ != nullptr) backend_->free(std::exchange(ptr_, nullptr));
    count_ = 0;
  }

 private:
  Backend* backend_ = nullptr;
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Begins a capture on construction. finish() ends it and hands back the graph; if the guard is
// destroyed without finish() (something threw mid-capture) it ends the capture and destroys the
// half-made graph, so the stream is usable again and nothing leaks.
class CaptureGuard {
 public:
  CaptureGuard(Backend& backend, StreamRaw stream) : backend_(backend), stream_(stream) {
    backend_.begin_capture(stream_);
    active_ = true;
  }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
  ~CaptureGuard() {
    if (!active_) return;
    try {
      GraphRaw g = backend_.end_capture(stream_);
      backend_.graph_destroy(g);
    } catch (...) {  // the capture was already invalid: ending it is all that was needed
    }
  }

  Graph finish() {
    active_ = false;  // end_capture leaves capture mode even when it throws
    return Graph(backend_, backend_.end_capture(stream_));
  }

 private:
  Backend& backend_;
  StreamRaw stream_;
  bool active_ = false;
};

}  // namespace graphrt
