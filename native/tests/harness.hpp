// The ctest harness: CHECK macros that report file:line and keep going, and ask() — one request
// to a Session on the CPU backend, its answer lines parsed back from JSON (so the tests read what
// a client reads).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "graphrt/backends.hpp"
#include "json.hpp"
#include "session.hpp"

namespace graphrt::test {

// A rendezvous socket path in a fresh directory, removed when the test is done (rank 0 unlinks
// the socket itself).
struct FreshSocket {
  std::string dir;
  std::string path;
  FreshSocket() {
    char tmpl[] = "/tmp/graphrt-rv-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    path = dir + "/rv.sock";
  }
  ~FreshSocket() { ::rmdir(dir.c_str()); }
};

inline int failures = 0;

// A check the rest of the test stands on (a size before indexing): stop the test when it fails,
// instead of reading past the end of a vector.
#define REQUIRE(cond)                                                           \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++::graphrt::test::failures;                                            \
    }                                                                         \
  } while (0)

#define CHECK_EQ(a, b)                                                                      \
  do {                                                                                      \
    const auto va_ = (a);                                                                   \
    const auto vb_ = (b);                                                                   \
    if (!(va_ == vb_)) {                                                                    \
      std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%s vs %s)\n", __FILE__, __LINE__, #a, #b, \
                   ::graphrt::test::show(va_).c_str(), ::graphrt::test::show(vb_).c_str()); \
      ++::graphrt::test::failures;                                                          \
    }                                                                                       \
  } while (0)

inline std::string show(const std::string& s) { return "\"" + s + "\""; }
inline std::string show(const char* s) { return show(std::string(s)); }
inline std::string show(bool b) { return b ? "true" : "false"; }
template <class T>
std::string show(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) return std::to_string(v);
  else return "<value>";
}

inline int finish(const char* name) {
  if (failures == 0) std::printf("%s: ok\n", name);
  else std::printf("%s: %d check(s) failed\n", name, failures);
  return failures == 0 ? 0 : 1;
}

inline Session cpu_session() { return Session(make_cpu_backend()); }

// One request; the answer's lines, parsed.
inline std::vector<json::Value> ask(Session& s, const Request& req) {
  std::vector<json::Value> lines;
  s.handle(req, [&](const std::string& l) { lines.push_back(json::parse(l)); });
  return lines;
}

// The first line of `type` in an answer (a null Value when there is none).
inline json::Value of_type(const std::vector<json::Value>& lines, const std::string& type) {
  for (const auto& l : lines)
    if (const auto* t = l.find("type"); t && t->text == type) return l;
  return {};
}

inline std::vector<std::string> strings(const json::Value& obj, const char* key) {
  std::vector<std::string> out;
  if (const auto* a = obj.find(key))
    for (const auto& v : a->items) out.push_back(v.text);
  return out;
}

inline double number(const json::Value& obj, const char* key) {
  const auto* v = obj.find(key);
  return v && v->kind == json::Value::Kind::Number ? v->number : -1;
}

inline bool boolean(const json::Value& obj, const char* key) {
  const auto* v = obj.find(key);
  return v && v->kind == json::Value::Kind::Bool && v->boolean;
}

inline bool is_null(const json::Value& obj, const char* key) {
  const auto* v = obj.find(key);
  return v && v->kind == json::Value::Kind::Null;
}

inline Request decode_request() {
  Request r;
  r.workload = "decode";
  r.params.layers = 2;
  r.params.kernels_per_layer = 10;
  r.params.hidden = 32;
  r.params.max_pos = 32;
  return r;
}

}  // namespace graphrt::test
