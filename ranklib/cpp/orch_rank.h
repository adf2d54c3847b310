// orch_rank.h 1.0: the C++17 rank library of orch's rank protocol, orch-rank version 1
// (ranklib/PROTOCOL.md). Header-only; it needs the standard library, POSIX and, with CUDA on,
// the CUDA runtime (and dlopen, for orch's injection library). CUDA is on when nvcc compiles it
// (__CUDACC__) or when ORCH_RANK_CUDA is defined before the include (a host compiler linking cudart).
//
//   struct MyProgram : orch_rank::Program { ... };
//   int main() { MyProgram p; return orch_rank::serve(p); }
//
// serve() owns the protocol: hello, requests on stdin, answers on the stdout the process started
// with (fd 1 then points at stderr, so the program's printf cannot break the protocol), timing,
// output hashes, the graph registry and the error codes. ranklib/cpp/README.md shows a program.
#pragma once

#if defined(__CUDACC__) && !defined(ORCH_RANK_CUDA)
#define ORCH_RANK_CUDA 1
#endif

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef ORCH_RANK_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>
#endif
#if defined(ORCH_RANK_NCCL)
#include <nccl.h>
#endif

namespace orch_rank {

inline constexpr const char* kLibrary = "orch_rank.h 1.0";

// BEGIN GENERATED PROTOCOL CONSTANTS (npm run gen:protocol; do not edit)
// generated from jobs/rank-protocol-constants.ts by `npm run gen:protocol`; do not edit.
inline constexpr const char* kProtocol = "orch-rank";
inline constexpr int kVersion = 1;
inline constexpr std::size_t kMaxLineBytes = 1048576;  // a line's bytes, its newline not counted
inline constexpr std::size_t kRequestsInFlightMax = 2;  // written by the worker, not yet answered
inline constexpr const char* kToggleOnStrings[] = {"true", "on"};
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUserError = 2;
inline constexpr std::size_t kExchangeKeyMaxChars = 64;  // of [A-Za-z0-9_.-]
inline constexpr std::size_t kExchangeMaxBytes = 4096;
inline constexpr int kExchangeMaxPerAttempt = 16;
inline constexpr const char* kExchangeNcclKey = "nccl-id";
inline constexpr const char* kHostPhaseEnv = "ORCH_HOST_PHASE";
inline constexpr const char* kHostPhaseDevicesEnv = "CUDA_VISIBLE_DEVICES";
inline constexpr const char* kPrepareTouchedCuda = "PREPARE_TOUCHED_CUDA";
inline constexpr std::uint64_t kInjectAbi = 1;
// END GENERATED PROTOCOL CONSTANTS

// ---------------------------------------------------------------------------------------------
// JSON: a reader for request lines and ORCH_PARAMS, and the writer's string and number forms.
// graphrt has its own (native/src/json.cpp, native/src/hash.hpp for FNV-1a): this header is copied
// into users' programs and may include nothing of orch's, so it carries its own small copies.

namespace json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<std::string> keys;  // an object's keys in order; items[i] is keys[i]'s value
  std::vector<Value> items;       // an array's elements or an object's values

  const Value* find(const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &items[i];
    return nullptr;
  }
};

inline const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "a boolean";
    case Value::Kind::Number: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Object: return "an object";
  }
  return "?";
}

// RFC 8259, strictly: one value, no trailing text, no duplicate keys, escapes decoded to UTF-8.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Value document() {
    Value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;  // bounds the recursion a hostile line could ask for

  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument(why + " at byte " + std::to_string(i_));
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  bool digit() const { return peek() >= '0' && peek() <= '9'; }
  void skip_ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than 64 levels");
    skip_ws();
    if (at_end()) fail("unexpected end of input");
    Value v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::Kind::Object;
      if (eat('}')) return v;
      do {
        skip_ws();
        if (peek() != '"') fail("expected a string key");
        std::string key = string();
        if (v.find(key) != nullptr) fail("duplicate key \"" + key + "\"");
        expect(':');
        v.keys.push_back(std::move(key));
        v.items.push_back(value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = Value::Kind::Array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::String;
      v.string = string();
    } else if (literal("true")) {
      v.kind = Value::Kind::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Value::Kind::Bool;
    } else if (!literal("null")) {
      v.kind = Value::Kind::Number;
      v.number = number();
    }
    return v;
  }

  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  double number() {
    const std::size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else if (digit()) {
      while (digit()) ++i_;
    } else {
      fail("invalid value");
    }
    if (peek() == '.') {
      ++i_;
      if (!digit()) fail("expected a digit after '.'");
      while (digit()) ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!digit()) fail("expected a digit in the exponent");
      while (digit()) ++i_;
    }
    const double d = std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
    if (!std::isfinite(d)) fail("number out of range");
    return d;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_end()) fail("unterminated string");
      switch (s_[i_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, code_point()); break;
        default: fail("invalid escape");
      }
    }
  }

  std::uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("short \\u escape");
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("invalid \\u escape");
    }
    return v;
  }

  // A \u escape; a UTF-16 surrogate pair (two escapes) makes one code point.
  std::uint32_t code_point() {
    const std::uint32_t hi = hex4();
    if (hi >= 0xDC00 && hi <= 0xDFFF) fail("unpaired surrogate");
    if (hi < 0xD800 || hi > 0xDBFF) return hi;
    if (s_.compare(i_, 2, "\\u") != 0) fail("unpaired surrogate");
    i_ += 2;
    const std::uint32_t lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

// Throws std::invalid_argument saying what is wrong and where.
inline Value parse(const std::string& text) { return Parser(text).document(); }

inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

inline std::string number(double d) {
  if (!std::isfinite(d)) throw std::domain_error("a number that is not finite has no JSON form");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", d);
  return buf;
}

}  // namespace json

// ---------------------------------------------------------------------------------------------
// What the program sees: its params, the request's toggles, its outputs.

// ORCH_PARAMS (workload.params) with typed getters: an absent param gives the fallback, a param
// of another type throws std::invalid_argument (from setup: the rank fails to start, saying so).
class Params {
 public:
  Params() { v_.kind = json::Value::Kind::Object; }
  explicit Params(json::Value object) : v_(std::move(object)) {
    if (v_.kind != json::Value::Kind::Object) throw std::invalid_argument("params must be a JSON object");
  }

  static Params from_env() {
    const char* text = std::getenv("ORCH_PARAMS");
    if (text == nullptr || *text == '\0') return Params();
    try {
      return Params(json::parse(text));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("ORCH_PARAMS: ") + e.what());
    }
  }

  bool has(const std::string& name) const { return v_.find(name) != nullptr; }

  long long get_int(const std::string& name, long long fallback) const {
    const json::Value* v = typed(name, json::Value::Kind::Number, "an integer");
    if (v == nullptr) return fallback;
    if (v->number != std::floor(v->number) || std::fabs(v->number) > 9007199254740992.0)
      throw std::invalid_argument("param \"" + name + "\" must be an integer, got " + json::number(v->number));
    return static_cast<long long>(v->number);
  }
  double get_double(const std::string& name, double fallback) const {
    const json::Value* v = typed(name, json::Value::Kind::Number, "a number");
    return v == nullptr ? fallback : v->number;
  }
  std::string get_string(const std::string& name, const std::string& fallback) const {
    const json::Value* v = typed(name, json::Value::Kind::String, "a string");
    return v == nullptr ? fallback : v->string;
  }
  bool get_bool(const std::string& name, bool fallback) const {
    const json::Value* v = typed(name, json::Value::Kind::Bool, "a boolean");
    return v == nullptr ? fallback : v->boolean;
  }

 private:
  const json::Value* typed(const std::string& name, json::Value::Kind kind, const char* what) const {
    const json::Value* v = v_.find(name);
    if (v != nullptr && v->kind != kind)
      throw std::invalid_argument("param \"" + name + "\" must be " + what + ", got " + json::kind_name(v->kind));
    return v;
  }

  json::Value v_;
};

// Whether a toggle's value reads as on, as orch reads an arm's toggle: true, or one of
// kToggleOnStrings; absent, false and every other string are off.
inline bool toggle_on(const std::string& value) {
  for (const char* s : kToggleOnStrings)
    if (value == s) return true;
  return false;
}

// A request's toggles. A toggle absent from the request is off; a value is a boolean or a string
// (a toggle the spec sweeps). on() reads a value by toggle_on().
class Toggles {
 public:
  bool on(const std::string& name) const { return toggle_on(value(name)); }
  // The value as sent: "true" / "false" for a boolean, "" when absent.
  std::string value(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::string() : it->second;
  }
  void set(const std::string& name, bool on) { values_[name] = on ? "true" : "false"; }
  // Not an overload of set(): a string literal would convert to bool and pick that one.
  void set_value(const std::string& name, const std::string& value) { values_[name] = value; }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, std::string>& all() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// A buffer hashed after every measured step. on_device: `data` is device memory (copied to the
// host for hashing); it is ignored in a build without CUDA.
struct Output {
  std::string name;
  const void* data = nullptr;
  std::size_t bytes = 0;
  bool on_device = false;
};

// The user's program. A graph keeps the pointers it captured: reset() must write the seed's state
// into the buffers it has, not allocate new ones.
class Program {
 public:
  virtual ~Program() = default;
  virtual std::string name() const = 0;
  // Every toggle the program understands (hello's `toggles`).
  virtual std::vector<std::string> toggles() const { return {}; }
  // The toggle that makes step() replay a graph (e.g. "GRAPH"), or "" for none: a rep with it on
  // runs one untimed step first, so that the graph is captured before the warm-up.
  virtual std::string graph_toggle() const { return {}; }
  // Host-side start that needs no device (imports, weights into host memory): runs before
  // setup(), with CUDA_VISIBLE_DEVICES empty under the host phase (ORCH_HOST_PHASE=1,
  // ranklib/PROTOCOL.md "Host phase"); it must not touch CUDA.
  virtual void prepare() {}
  virtual void setup(const Params&) {}
  // Back to the state of orch_rank::seed(): every rep and both sides of the identity gate start here.
  virtual void reset() = 0;
  virtual void step(const Toggles&) = 0;
  virtual std::vector<Output> outputs() = 0;
  // Numbers the answers report (`counters`, e.g. launches_per_step), read at the end of a request.
  virtual std::map<std::string, double> counters() { return {}; }
};

// Thrown by graph() (or by the program) when a step cannot be captured: CAPTURE_FAILED.
class CaptureFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#ifdef ORCH_RANK_CUDA
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t error, const std::string& what) : std::runtime_error(what), code(error) {}
  cudaError_t code;
};

namespace detail {
inline void cuda_check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess)
    throw CudaError(e, std::string(expr) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " +
                           file + ":" + std::to_string(line));
}
}  // namespace detail

// Throws orch_rank::CudaError when a CUDA call fails; from step(), that is STEP_FAILED.
#define ORCH_CUDA(expr) ::orch_rank::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
#endif

// BLAKE2b (RFC 7693) with an 8-byte digest as 16 lowercase hex digits: hello's hash "blake2b-64",
// Python's hashlib.blake2b(digest_size=8), so both libraries hash the same bytes alike.
inline std::string blake2b64_hex(const void* data, std::size_t bytes) {
  static constexpr std::uint64_t iv[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                                          0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                                          0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
  static constexpr std::uint8_t sigma[12][16] = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
      {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
      {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
      {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
      {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};
  constexpr std::size_t kOut = 8;
  std::uint64_t h[8];
  for (int i = 0; i < 8; ++i) h[i] = iv[i];
  h[0] ^= 0x01010000ULL ^ kOut;  // digest length, no key, fanout 1, depth 1
  const auto rotr = [](std::uint64_t x, int n) { return (x >> n) | (x << (64 - n)); };
  const auto compress = [&](const unsigned char* block, std::uint64_t t, bool last) {
    std::uint64_t m[16], v[16];
    for (int i = 0; i < 16; ++i) {
      m[i] = 0;
      for (int b = 0; b < 8; ++b) m[i] |= static_cast<std::uint64_t>(block[i * 8 + b]) << (8 * b);
    }
    for (int i = 0; i < 8; ++i) v[i] = h[i], v[i + 8] = iv[i];
    v[12] ^= t;  // bytes so far; the high word stays 0 below 2^64 bytes
    if (last) v[14] = ~v[14];
    const auto g = [&](int a, int b, int c, int d, std::uint64_t x, std::uint64_t y) {
      v[a] = v[a] + v[b] + x, v[d] = rotr(v[d] ^ v[a], 32), v[c] = v[c] + v[d], v[b] = rotr(v[b] ^ v[c], 24);
      v[a] = v[a] + v[b] + y, v[d] = rotr(v[d] ^ v[a], 16), v[c] = v[c] + v[d], v[b] = rotr(v[b] ^ v[c], 63);
    };
    for (const auto& s : sigma) {
      g(0, 4, 8, 12, m[s[0]], m[s[1]]), g(1, 5, 9, 13, m[s[2]], m[s[3]]);
      g(2, 6, 10, 14, m[s[4]], m[s[5]]), g(3, 7, 11, 15, m[s[6]], m[s[7]]);
      g(0, 5, 10, 15, m[s[8]], m[s[9]]), g(1, 6, 11, 12, m[s[10]], m[s[11]]);
      g(2, 7, 8, 13, m[s[12]], m[s[13]]), g(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; ++i) h[i] ^= v[i] ^ v[i + 8];
  };
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (bytes - done > 128) {  // the last block (full or not) is compressed as the final one
    done += 128;
    compress(p + done - 128, done, false);
  }
  unsigned char last[128] = {};
  if (bytes > done) std::memcpy(last, p + done, bytes - done);
  compress(last, bytes, true);
  char buf[2 * kOut + 1];
  for (std::size_t i = 0; i < kOut; ++i)
    std::snprintf(buf + 2 * i, 3, "%02x", static_cast<unsigned>((h[i / 8] >> (8 * (i % 8))) & 0xff));
  return buf;
}

// FNV-1a 64 (as graphrt) as 16 lowercase hex digits, for a program's own standalone checks.
inline std::string fnv1a64_hex(const void* data, std::size_t bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// The runtime: the stream, the graph registry, the request's seed.

namespace detail {

#ifdef ORCH_RANK_CUDA
inline bool cuda_device_visible() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}
#endif

struct Runtime {
  std::uint64_t seed = 0;
  // What shapes a graph beside the user's key: the step's toggles, every one the program knows
  // (absent ones "false"), so an arm never replays a graph captured under another arm's toggles.
  std::string shape;
  // Counted since the request began: a rep's mode and graph fields read them.
  std::size_t captures = 0;
  std::size_t replays = 0;
#ifdef ORCH_RANK_CUDA
  bool cuda = cuda_device_visible();
  cudaStream_t stream = nullptr;
  bool capturing = false;
  std::map<std::string, cudaGraphExec_t> graphs;
#else
  // The host emulation: a graph is the list of launch() calls its capture recorded.
  std::vector<std::function<void()>>* recording = nullptr;
  std::map<std::string, std::vector<std::function<void()>>> graphs;
#endif
};

// One per process, never destroyed: CUDA's own teardown at exit may already have run.
inline Runtime& rt() {
  static Runtime* r = new Runtime();
  return *r;
}

}  // namespace detail

// The seed of the request being served (0 before the first): reset() builds its state from it.
inline std::uint64_t seed() { return detail::rt().seed; }

#ifdef ORCH_RANK_CUDA
// The stream every step runs on, created non-blocking on first use: the step's time is measured
// with events on it and its outputs are copied on it, so work on another stream must join it.
inline cudaStream_t stream() {
  auto& r = detail::rt();
  if (r.stream == nullptr) ORCH_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  return r.stream;
}
#endif

// Drops every captured graph; the next graph() of each key captures again. The identity gate
// does this before its graph side.
inline void drop_graphs() {
  auto& r = detail::rt();
#ifdef ORCH_RANK_CUDA
  for (auto& kv : r.graphs) (void)cudaGraphExecDestroy(kv.second);
#endif
  r.graphs.clear();
}

namespace detail {

#ifdef ORCH_RANK_CUDA
// Ends a capture that the body left by throwing; true when CUDA had invalidated it (the body
// called something a capture cannot hold), so that the error is the capture's.
inline bool abandon_capture() {
  auto& r = rt();
  cudaGraph_t partial = nullptr;
  const cudaError_t e = cudaStreamEndCapture(r.stream, &partial);
  r.capturing = false;
  if (partial != nullptr) (void)cudaGraphDestroy(partial);
  (void)cudaGetLastError();
  return e == cudaErrorStreamCaptureInvalidated;
}

inline cudaGraphExec_t capture(const std::string& key, const std::function<void()>& body) {
  auto& r = rt();
  const std::string who = "graph(\"" + key + "\")";
  if (r.capturing) throw CaptureFailed(who + " inside another graph's capture");
  ORCH_CUDA(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
  r.capturing = true;
  try {
    body();
  } catch (const std::exception& e) {
    if (abandon_capture()) throw CaptureFailed(who + ": the capture was invalidated: " + e.what());
    throw;
  } catch (...) {
    abandon_capture();
    throw;
  }
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(r.stream, &g);
  r.capturing = false;
  if (e != cudaSuccess) {
    if (g != nullptr) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
    throw CaptureFailed(who + ": cudaStreamEndCapture: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                        "): the body called something a stream capture cannot hold, such as a synchronous "
                        "copy or a synchronization");
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, g, 0);
  (void)cudaGraphDestroy(g);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw CaptureFailed(who + ": cudaGraphInstantiate: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  ++r.captures;
  return exec;
}
#else
inline std::vector<std::function<void()>> capture(const std::string& key, const std::function<void()>& body) {
  auto& r = rt();
  if (r.recording != nullptr) throw CaptureFailed("graph(\"" + key + "\") inside another graph's capture");
  std::vector<std::function<void()>> calls;
  r.recording = &calls;
  try {
    body();
  } catch (...) {
    r.recording = nullptr;
    throw;
  }
  r.recording = nullptr;
  ++r.captures;
  return calls;
}
#endif

}  // namespace detail

#ifndef ORCH_RANK_CUDA
// The host emulation's kernel launch: outside a capture it runs now; inside one it is only
// recorded, and each replay runs it again. Host code of the step that is not a launch is not
// replayed, as on a GPU. A kernel should capture scalars by value, as a kernel's arguments are
// copied at launch, and buffers by pointer.
inline void launch(std::function<void()> kernel) {
  auto& r = detail::rt();
  if (r.recording != nullptr) r.recording->push_back(std::move(kernel));
  else kernel();
}
#endif

// Runs `body` as a graph: the first call for a key under the step's toggles captures it (the
// body's launches are recorded, not run) and replays it; every later call with the same key and
// toggles replays what was captured. The toggles are part of the key already; anything else that
// changes the launches (a size) must be in the key.
inline void graph(const std::string& key, const std::function<void()>& body) {
  auto& r = detail::rt();
#ifdef ORCH_RANK_CUDA
  if (!r.cuda) {  // no device: nothing to capture, the step runs eagerly (the gate says mode eager)
    body();
    return;
  }
  const std::string shaped = key + '\n' + r.shape;
  auto it = r.graphs.find(shaped);
  if (it == r.graphs.end()) it = r.graphs.emplace(shaped, detail::capture(key, body)).first;
  ORCH_CUDA(cudaGraphLaunch(it->second, stream()));
#else
  const std::string shaped = key + '\n' + r.shape;
  auto it = r.graphs.find(shaped);
  if (it == r.graphs.end()) it = r.graphs.emplace(shaped, detail::capture(key, body)).first;
  for (const auto& call : it->second) launch(call);  // recorded again when another capture is live, as CUDA nests a graph
#endif
  ++r.replays;
}

// ---------------------------------------------------------------------------------------------
// The protocol stream and stdin, shared by serve() and exchange(); apart from Runtime, whose
// construction asks CUDA for its devices (the host phase must not, before `open`). Lines read
// while an exchange waits for its answer are the requests the worker wrote behind the one being
// served (the one-deep pipeline): they are held, at most kRequestsInFlightMax, and serve() reads
// them before stdin, in the order they came.

namespace detail {

enum class Read { Line, End, TooLong };

struct Io {
  int out = -1;       // the protocol stream, once serve() took it
  int exchanges = 0;  // exchange() calls so far
  // lines read off stdin while an exchange waited for its answer, not yet served (TooLong: over the limit)
  std::deque<std::pair<Read, std::string>> held;
};
inline Io& io() {
  static Io* x = new Io();
  return *x;
}

// One whole line per write(2) call sequence; a failed write means the worker is gone.
inline void write_line(const std::string& line) {
  if (io().out < 0) throw std::logic_error("orch_rank: the protocol stream is not open (call inside serve())");
  const std::string s = line + "\n";
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(io().out, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("writing the protocol stream: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

// The next line of stdin without its "\n"; a line over kMaxLineBytes is read to its end and
// dropped (TooLong), so a runaway writer cannot make the rank buffer without bound.
inline Read read_line(std::string& line) {
  line.clear();
  std::streambuf* in = std::cin.rdbuf();
  bool any = false, too_long = false;
  for (;;) {
    const int c = in->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      if (!any) return Read::End;
      break;
    }
    any = true;
    if (c == '\n') break;
    if (line.size() < kMaxLineBytes) line.push_back(static_cast<char>(c));
    else too_long = true;
  }
  if (too_long) {
    line.clear();
    return Read::TooLong;
  }
  return Read::Line;
}

// Keeps a line read while `what` waited for its answer, for serve(); more than the worker may have
// in flight is a protocol error (std::runtime_error), the line not kept.
inline void hold(Read got, const std::string& line, const std::string& what) {
  if (io().held.size() >= kRequestsInFlightMax)
    throw std::runtime_error(what + ": one line more than the " + std::to_string(kRequestsInFlightMax) +
                             " requests the worker may have in flight came before its answer (ranklib/PROTOCOL.md \"Exchange\"), a "
                             "protocol error; dropped: " + line.substr(0, 200));
  io().held.emplace_back(got, line);
}

// The next line to serve: a held one first, else stdin's (read_line).
inline Read next_line(std::string& line) {
  if (io().held.empty()) return read_line(line);
  const Read got = io().held.front().first;
  line = std::move(io().held.front().second);
  io().held.pop_front();
  return got;
}

inline std::string base64_encode(const std::string& in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, in.size() - i);
    unsigned v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<unsigned char>(in[i + k]) : 0u);
    out += abc[(v >> 18) & 63];
    out += abc[(v >> 12) & 63];
    out += n > 1 ? abc[(v >> 6) & 63] : '=';
    out += n > 2 ? abc[v & 63] : '=';
  }
  return out;
}

inline std::string base64_decode(const std::string& in) {
  const auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) throw std::invalid_argument("base64 of a length not a multiple of 4");
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    const int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=') : 0;
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = k >= 4 - pad ? 0 : val(in[i + k]);
      if (d < 0) throw std::invalid_argument("not base64");
      v = (v << 6) | static_cast<unsigned>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

inline bool exchange_key_ok(const std::string& key) {
  if (key.empty() || key.size() > kExchangeKeyMaxChars) return false;
  for (const char c : key)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

inline int this_rank() {
  const char* r = std::getenv("ORCH_RANK");
  return r == nullptr || *r == '\0' ? 0 : std::atoi(r);
}

}  // namespace detail

// Bytes from rank 0 to every rank of the gang, through the worker (ranklib/PROTOCOL.md
// "exchange"): rank 0's `data` (at most kExchangeMaxBytes) comes back on every rank, rank 0's
// included; other ranks' `data` is not sent. Blocks until the worker answers; throws
// std::runtime_error with the worker's text when it cannot (rank 0 never published in time).
// Callable in setup() (before hello) or inside a request: a request line it reads while it waits
// (the worker may have written the next one already) is held and served after this one.
inline std::string exchange(const std::string& key, const std::string& data) {
  if (!detail::exchange_key_ok(key))
    throw std::invalid_argument("exchange key \"" + key + "\" must be 1-" + std::to_string(kExchangeKeyMaxChars) + " of A-Z a-z 0-9 _ . -");
  const bool root = detail::this_rank() == 0;
  if (root && data.size() > kExchangeMaxBytes)
    throw std::invalid_argument("exchange \"" + key + "\": " + std::to_string(data.size()) + " bytes, over " + std::to_string(kExchangeMaxBytes));
  if (detail::io().exchanges >= kExchangeMaxPerAttempt)
    throw std::runtime_error("exchange \"" + key + "\": at most " + std::to_string(kExchangeMaxPerAttempt) + " exchanges per rank");
  ++detail::io().exchanges;
  detail::write_line("{\"v\":1,\"type\":\"exchange\",\"key\":" + json::quote(key) + ",\"data\":" +
                     (root ? "\"" + detail::base64_encode(data) + "\"" : std::string("null")) + "}");
  std::string line;
  json::Value reply;
  for (;;) {
    // stdin's own lines, never the held ones: those are requests, not this answer
    const detail::Read got = detail::read_line(line);
    if (got == detail::Read::End) throw std::runtime_error("exchange \"" + key + "\": stdin closed before the worker's answer");
    if (got == detail::Read::Line && line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    if (got == detail::Read::Line) {
      try {
        reply = json::parse(line);
        const json::Value* op = reply.find("op");
        if (reply.kind == json::Value::Kind::Object && op != nullptr && op->kind == json::Value::Kind::String && op->string == "exchange")
          break;
      } catch (const std::invalid_argument&) {
        // not JSON: not the answer; served (and refused) after it
      }
    }
    // a request the worker wrote behind the one being served (the one-deep pipeline): served after
    detail::hold(got, line, "exchange \"" + key + "\"");
  }
  const json::Value* k = reply.find("key");
  if (k == nullptr || k->string != key)
    throw std::runtime_error("exchange \"" + key + "\": expected {\"op\":\"exchange\",\"key\":\"" + key + "\"}, got " + line.substr(0, 200));
  if (const json::Value* err = reply.find("error"); err != nullptr) throw std::runtime_error("exchange \"" + key + "\": " + err->string);
  const json::Value* d = reply.find("data");
  if (d == nullptr || d->kind != json::Value::Kind::String) throw std::runtime_error("exchange \"" + key + "\": the answer has no data");
  try {
    return detail::base64_decode(d->string);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("exchange \"" + key + "\": " + e.what());
  }
}

#if defined(ORCH_RANK_NCCL)
// rank 0 makes an NCCL unique id and every rank gets it (exchanged under kExchangeNcclKey).
inline ncclUniqueId nccl_unique_id() {
  ncclUniqueId id{};
  std::string mine;
  if (detail::this_rank() == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed");
    mine.assign(reinterpret_cast<const char*>(&id), sizeof id);
  }
  // Qualified: unqualified, argument-dependent lookup (std::string) picks std::exchange, a better
  // match for a const char* key, and the call does not compile.
  const std::string got = orch_rank::exchange(kExchangeNcclKey, mine);
  if (got.size() != sizeof id)
    throw std::runtime_error("nccl_unique_id: exchanged " + std::to_string(got.size()) + " bytes, not " + std::to_string(sizeof id));
  std::memcpy(&id, got.data(), sizeof id);
  return id;
}
#endif

// ---------------------------------------------------------------------------------------------
// serve(): the protocol.

namespace detail {
inline std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A request the rank refuses: BAD_REQUEST or UNKNOWN_TOGGLE.
struct RequestError : std::runtime_error {
  RequestError(const char* error_code, const std::string& what) : std::runtime_error(what), code(error_code) {}
  const char* code;
};

// The program's own code threw: STEP_FAILED.
struct StepFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// orch's CUPTI injection library (native/inject/orch_inject.h, ABI kInjectAbi), mirrored: this
// header includes nothing of orch's. On a cuda card the worker names it in CUDA_INJECTION64_PATH
// and the driver loads it at cuInit; it counts the driver calls of the whole process.

struct InjectCounts {  // struct orch_inject_counts
  std::uint64_t abi = 0, initialized = 0, kernels = 0, captured = 0, graphs = 0, memcpy = 0, memset = 0, syncs = 0;
};

struct InjectClock {  // struct orch_inject_clock
  int ok = 0, sm_mhz = -1, mem_mhz = -1, temp_c = -1;
  double power_w = -1;
  unsigned long long reasons = 0, xid_events = 0;
};

struct InjectEcc {  // orch_inject_ecc's answer: read beside each clock reading
  bool ok = false;
  unsigned long long volatile_uncorrected = 0;
};

struct InjectKernel {  // struct orch_inject_kernel (trace mode)
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t graph_id = 0, stream_id = 0;
};

struct InjectGraph {  // struct orch_inject_graph (trace mode)
  std::uint32_t graph_id = 0, exec_id = 0;
  std::uint64_t nodes = 0, instantiate_ns = 0;
};

inline InjectCounts since(const InjectCounts& now, const InjectCounts& before) {
  InjectCounts d = now;
  d.kernels -= before.kernels;
  d.captured -= before.captured;
  d.graphs -= before.graphs;
  d.memcpy -= before.memcpy;
  d.memset -= before.memset;
  d.syncs -= before.syncs;
  return d;
}

// The library as this process has it: counting, or not and why (reason()); its clocks apart, as
// NVML answers while another profiler holds CUPTI.
class Inject {
 public:
#ifdef ORCH_RANK_CUDA
  // After cuInit (CUDA's first call): by then the driver has loaded the library or never will.
  void open() {
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (path == nullptr || *path == '\0') {
      reason_ = "CUDA_INJECTION64_PATH is not set";
      return;
    }
    void* lib = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) {
      reason_ = std::string("CUDA_INJECTION64_PATH names ") + path + ", which is not loaded in this process";
      return;
    }
    const auto read_counts = reinterpret_cast<int (*)(InjectCounts*)>(::dlsym(lib, "orch_inject_read"));
    const auto status = reinterpret_cast<const char* (*)()>(::dlsym(lib, "orch_inject_status"));
    if (read_counts == nullptr || status == nullptr) {
      reason_ = std::string(path) + " has no orch_inject_read: not orch's injection library";
      return;
    }
    InjectCounts c;
    const bool counting = read_counts(&c) == 1;
    if (c.abi != kInjectAbi) {
      reason_ = std::string(path) + " has ABI " + std::to_string(c.abi) + "; orch_rank.h reads ABI " + std::to_string(kInjectAbi);
      return;
    }
    clocks_ = reinterpret_cast<int (*)(InjectClock*)>(::dlsym(lib, "orch_inject_clocks"));
    reason_name_ = reinterpret_cast<const char* (*)(unsigned)>(::dlsym(lib, "orch_inject_reason_name"));
    if (clocks_ == nullptr || reason_name_ == nullptr) clocks_ = nullptr;
    ecc_ = reinterpret_cast<int (*)(unsigned long long*)>(::dlsym(lib, "orch_inject_ecc"));  // absent before it
    // pause and resume: new symbols of ABI 1, absent from a library built before them
    pause_ = reinterpret_cast<int (*)()>(::dlsym(lib, "orch_inject_pause"));
    resume_ = reinterpret_cast<int (*)()>(::dlsym(lib, "orch_inject_resume"));
    if (pause_ == nullptr || resume_ == nullptr) pause_ = resume_ = nullptr;
    open_trace(lib, path, status);
    status_ = status;
    if (counting) read_ = read_counts;
    else reason_ = status();
  }

  // Trace mode's functions (ORCH_INJECT_TRACE=1 when the driver loaded the library), or why not.
  void open_trace(void* lib, const char* path, const char* (*status)()) {
    const auto tracing = reinterpret_cast<int (*)()>(::dlsym(lib, "orch_inject_tracing"));
    timestamp_ = reinterpret_cast<unsigned long long (*)()>(::dlsym(lib, "orch_inject_timestamp"));
    kernels_ = reinterpret_cast<std::size_t (*)(InjectKernel*, std::size_t, unsigned long long*)>(::dlsym(lib, "orch_inject_kernels"));
    graphs_ = reinterpret_cast<std::size_t (*)(InjectGraph*, std::size_t)>(::dlsym(lib, "orch_inject_graphs"));
    if (tracing == nullptr || timestamp_ == nullptr || kernels_ == nullptr || graphs_ == nullptr) {
      trace_reason_ = std::string(path) + " has no trace mode (built before it)";
      timestamp_ = nullptr;
    } else if (tracing() != 1) {
      trace_reason_ = std::string("the injection library is not tracing (ORCH_INJECT_TRACE=1 when the driver loaded it?): ") + status();
      timestamp_ = nullptr;
    }
  }
#else
  void open() {}
#endif

  bool counting() const { return read_ != nullptr; }
  const std::string& reason() const { return reason_; }
  // Whether the library still counts now (a failed pause or resume ends its counting), or why not.
  bool still_counting(std::string* why) const {
    InjectCounts c;
    if (read_ != nullptr && read_(&c) == 1) return true;
    *why = status_ != nullptr ? status_() : reason_;
    return false;
  }
  // A rep counts its warm-up and pauses for its timed steps where the library can pause.
  bool can_pause() const { return counting() && pause_ != nullptr; }
  // CUPTI off the driver's path until resume(); false where the library refused (it counts on).
  bool pause() {
    paused_ = can_pause() && pause_() == 1;
    return paused_;
  }
  // At a rep's start: the last rep's pause ends (a failed resume stops the counting: still_counting says so).
  void resume() {
    if (paused_) (void)resume_();
    paused_ = false;
  }
  bool tracing() const { return timestamp_ != nullptr; }
  // Why there is no trace: the library's absence (reason()) or trace mode's.
  const std::string& trace_reason() const { return trace_reason_.empty() ? reason_ : trace_reason_; }
  // CUPTI's clock, the kernel records' clock; 0 when not tracing.
  std::uint64_t timestamp() const { return timestamp_ != nullptr ? timestamp_() : 0; }
  // Every kernel record kept so far (moved out of the library); *dropped: records lost so far.
  std::vector<InjectKernel> take_kernels(unsigned long long* dropped) const {
    return take<InjectKernel>([&](InjectKernel* out, std::size_t cap) { return kernels_(out, cap, dropped); });
  }
  std::vector<InjectGraph> take_graphs() const {
    return take<InjectGraph>([&](InjectGraph* out, std::size_t cap) { return graphs_(out, cap); });
  }
  // Zeros while not counting: only differences are reported, and only while counting.
  InjectCounts counts() const {
    InjectCounts c;
    if (read_ != nullptr) (void)read_(&c);
    return c;
  }
  // NVML's reading of the current device; ok 0 without the library or NVML.
  InjectClock clock() const {
    InjectClock c;
    if (clocks_ != nullptr) (void)clocks_(&c);
    return c;
  }
  // The card's volatile uncorrected ECC errors so far; ok false without NVML's count.
  InjectEcc ecc() const {
    InjectEcc e;
    if (ecc_ != nullptr) e.ok = ecc_(&e.volatile_uncorrected) == 1;
    return e;
  }
  // {"sm_mhz":...,"reasons":[...]}, graphrt's form of a reading (native/PROTOCOL.md).
  std::string clock_json(const InjectClock& c) const {
    std::string reasons;
    for (unsigned bit = 0; bit < 64; ++bit) {
      const char* name = ((c.reasons >> bit) & 1ULL) != 0 ? reason_name_(bit) : nullptr;
      if (name != nullptr) reasons += (reasons.empty() ? "" : ",") + json::quote(name);
    }
    return "{\"sm_mhz\":" + std::to_string(c.sm_mhz) + ",\"mem_mhz\":" + std::to_string(c.mem_mhz) +
           ",\"temp_c\":" + std::to_string(c.temp_c) + ",\"power_w\":" + json::number(c.power_w) +
           ",\"reasons\":[" + reasons + "]}";
  }

 private:
  template <class T, class F>
  std::vector<T> take(F&& more) const {
    std::vector<T> all;
    if (timestamp_ == nullptr) return all;
    constexpr std::size_t kChunk = std::size_t{1} << 16;
    for (std::size_t n = kChunk; n == kChunk;) {
      const std::size_t at = all.size();
      all.resize(at + kChunk);
      n = more(all.data() + at, kChunk);
      all.resize(at + n);
    }
    return all;
  }

  std::string reason_ = "no CUDA in this build";
  std::string trace_reason_;
  unsigned long long (*timestamp_)() = nullptr;
  std::size_t (*kernels_)(InjectKernel*, std::size_t, unsigned long long*) = nullptr;
  std::size_t (*graphs_)(InjectGraph*, std::size_t) = nullptr;
  int (*read_)(InjectCounts*) = nullptr;
  int (*pause_)() = nullptr;
  int (*resume_)() = nullptr;
  bool paused_ = false;
  const char* (*status_)() = nullptr;
  int (*clocks_)(InjectClock*) = nullptr;
  int (*ecc_)(unsigned long long*) = nullptr;
  const char* (*reason_name_)(unsigned) = nullptr;
};

struct Request {
  std::string id, op, arm, toggle;
  Toggles toggles;
  long long warmup = 0, steps = 0, replays = 0;
  std::uint64_t seed = 0;
};

class Server {
 public:
  explicit Server(Program& program) : p_(program) {}

  int run() {
    double prepare_ms = 0;
    try {
      const char* phase = std::getenv(kHostPhaseEnv);
      if (phase != nullptr && std::string(phase) == "1") {
        const int code = host_phase(prepare_ms);
        if (code >= 0) return code;
      } else {
        prepare_ms = timed_ms([&] { user_start("prepare()", [&] { p_.prepare(); }); });
      }
      start(prepare_ms);
    } catch (const std::exception& e) {
      // No protocol line may come before hello: the worker quotes stderr's last line when we exit.
      std::fprintf(stderr, "orch_rank: %s failed to start: %s\n", program_name().c_str(), e.what());
      return kExitFailed;
    }
    std::string line;
    for (;;) {
      const Read got = next_line(line);
      if (got == Read::End) return kExitOk;
      if (got == Read::Line && line.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (!handle(got == Read::TooLong ? nullptr : &line)) return kExitFailed;
    }
  }


 private:
  std::string program_name() const {
    try {
      return p_.name();
    } catch (...) {
      return "the program";
    }
  }

  template <class F>
  static double timed_ms(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  template <class F>
  static void user_start(const char* what, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(what) + " threw: " + e.what());
    }
  }

  // Best effort: whether CUDA's driver was initialised in this process (by prepare()): the
  // driver library is loaded and answers a device count, which it refuses before cuInit.
  static bool cuda_initialised() {
#if defined(ORCH_RANK_CUDA)
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return false;
    const auto count = reinterpret_cast<int (*)(int*)>(::dlsym(lib, "cuDeviceGetCount"));
    int n = 0;
    return count != nullptr && count(&n) == 0;
#else
    return false;
#endif
  }

  // The host phase (ranklib/PROTOCOL.md "Host phase"): prepare() with no device visible, then
  // `prepared`, then wait for `open` and its devices. -1: go on to setup(); else the exit code.
  int host_phase(double& prepare_ms) {
    ::setenv(kHostPhaseDevicesEnv, "", 1);
    prepare_ms = timed_ms([&] { user_start("prepare()", [&] { p_.prepare(); }); });
    if (cuda_initialised()) {
      emit(std::string("{\"v\":1,\"type\":\"error\",\"code\":\"") + kPrepareTouchedCuda +
           "\",\"message\":\"prepare() initialised CUDA (the CUDA driver answers in this process); orch will start this rank "
           "inside its lease\",\"fatal\":true,\"final\":true}");
      return kExitUserError;
    }
    emit("{\"v\":1,\"type\":\"prepared\",\"prepare_ms\":" + json::number(prepare_ms) + "}");
    std::string line;
    for (;;) {
      const Read got = next_line(line);
      if (got == Read::End) return kExitOk;  // the worker gave the rank up before its lease
      if (got == Read::Line && line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string why = "a line over the line limit";
      if (got == Read::Line) {
        try {
          const json::Value v = json::parse(line);
          const json::Value* ver = v.find("v");
          const json::Value* op = v.find("op");
          const json::Value* devices = v.find("devices");
          if (v.kind == json::Value::Kind::Object && v.keys.size() == 3 && ver != nullptr && ver->kind == json::Value::Kind::Number &&
              ver->number == 1 && op != nullptr && op->string == "open" && devices != nullptr && devices->kind == json::Value::Kind::String) {
            ::setenv(kHostPhaseDevicesEnv, devices->string.c_str(), 1);
            return -1;
          }
          why = "expected {\"v\":1,\"op\":\"open\",\"devices\":\"...\"}";
        } catch (const std::invalid_argument& e) {
          why = std::string("not a JSON line: ") + e.what();
        }
      }
      emit("{\"v\":1,\"type\":\"error\",\"code\":\"BAD_REQUEST\",\"message\":" + json::quote("waiting for open: " + why) +
           ",\"fatal\":true,\"final\":true}");
      return kExitUserError;
    }
  }

  // CUDA first (setup may allocate and launch on the stream), then setup, then hello.
  void start(double prepare_ms) {

    std::string backend = "cpu", device = "host cpu (a build without CUDA)", timing = "host-clock";
#ifdef ORCH_RANK_CUDA
    device = "host cpu (no CUDA device visible)";
    if (rt().cuda) {
      int dev = 0;
      ORCH_CUDA(cudaGetDevice(&dev));
      cudaDeviceProp prop{};
      ORCH_CUDA(cudaGetDeviceProperties(&prop, dev));
      ORCH_CUDA(cudaEventCreate(&ev_start_));
      ORCH_CUDA(cudaEventCreate(&ev_end_));
      (void)stream();
      backend = "cuda";
      device = prop.name;
      timing = "cuda-events";
    }
#endif
    const Params params = Params::from_env();
    const double setup_ms = timed_ms([&] { p_.setup(params); });
    inject_.open();
    toggles_ = p_.toggles();
    graph_toggle_ = p_.graph_toggle();
    for (std::size_t i = 0; i < toggles_.size(); ++i)
      if (toggles_[i].empty() || std::find(toggles_.begin(), toggles_.begin() + i, toggles_[i]) != toggles_.begin() + i)
        throw std::invalid_argument("toggles() must be distinct non-empty names");
    if (!graph_toggle_.empty() && std::find(toggles_.begin(), toggles_.end(), graph_toggle_) == toggles_.end())
      throw std::invalid_argument("graph_toggle() \"" + graph_toggle_ + "\" is not among toggles()");
    std::string outputs;
    for (const Output& o : p_.outputs()) outputs += (outputs.empty() ? "" : ",") + json::quote(o.name);
    if (outputs.empty()) throw std::invalid_argument("outputs() names no buffer: the identity gate would compare nothing");
    std::string toggles;
    for (const std::string& t : toggles_) toggles += (toggles.empty() ? "" : ",") + json::quote(t);
    emit("{\"v\":1,\"type\":\"hello\",\"protocol\":\"orch-rank\",\"version\":1,\"name\":" + json::quote(p_.name()) +
         ",\"library\":" + json::quote(kLibrary) + ",\"backend\":" + json::quote(backend) +
         ",\"device\":" + json::quote(device) + ",\"pid\":" + std::to_string(::getpid()) +
         ",\"timing\":" + json::quote(timing) + ",\"hash\":\"blake2b-64\",\"toggles\":[" + toggles +
         "],\"outputs\":[" + outputs + "],\"prepare_ms\":" + json::number(prepare_ms) +
         ",\"setup_ms\":" + json::number(setup_ms) + ",\"final\":true}");
  }

  // One request, answered with its answer or an error line; false when the rank must exit.
  // `line` null: a request line over kMaxLineBytes, already dropped.
  bool handle(const std::string* line) {
    std::string id;
    const char* code = "INTERNAL";
    std::string message;
    try {
      if (line == nullptr) throw RequestError("BAD_REQUEST", "a request line over " + std::to_string(kMaxLineBytes) + " bytes");
      json::Value req;
      try {
        req = json::parse(*line);
      } catch (const std::invalid_argument& e) {
        throw RequestError("BAD_REQUEST", std::string("not a JSON line: ") + e.what());
      }
      if (req.kind != json::Value::Kind::Object) throw RequestError("BAD_REQUEST", "a request is a JSON object");
      if (const json::Value* v = req.find("id"); v != nullptr && v->kind == json::Value::Kind::String) id = v->string;
      const Request r = parse_request(req);
      const std::string answer = r.op == "rep" ? rep(r) : r.op == "trace" ? trace(r) : identity(r);
      if (answer.size() > kMaxLineBytes)
        throw RequestError("BAD_REQUEST", "the answer would be " + std::to_string(answer.size()) + " bytes, over the " +
                                              std::to_string(kMaxLineBytes) + "-byte line limit: ask for fewer steps");
      emit(answer);
      return true;
    } catch (const RequestError& e) {
      code = e.code;
      message = e.what();
    } catch (const CaptureFailed& e) {
      code = "CAPTURE_FAILED";
      message = e.what();
    } catch (const StepFailed& e) {
      code = "STEP_FAILED";
      message = e.what();
#ifdef ORCH_RANK_CUDA
    } catch (const CudaError& e) {
      code = "STEP_FAILED";
      message = std::string("the step's work failed on the device: ") + e.what();
#endif
    } catch (const std::exception& e) {
      message = std::string("orch_rank.h: ") + e.what();
    }
    const bool fatal = device_lost();
    if (fatal) message += " (a sticky CUDA error: the rank exits)";
    emit("{\"v\":1,\"type\":\"error\"" + (id.empty() ? std::string() : ",\"id\":" + json::quote(id)) +
         ",\"code\":\"" + code + "\",\"message\":" + json::quote(bounded(message)) +
         ",\"fatal\":" + (fatal ? "true" : "false") + ",\"final\":true}");
    return !fatal;
  }

  // A message short enough for its line, cut on a UTF-8 character boundary.
  static std::string bounded(std::string m) {
    constexpr std::size_t kMax = 4096;
    if (m.empty()) return "(no message)";
    if (m.size() <= kMax) return m;
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(m[cut]) & 0xC0) == 0x80) --cut;
    return m.substr(0, cut) + "...";
  }

  bool device_lost() {
#ifdef ORCH_RANK_CUDA
    if (!rt().cuda) return false;
    (void)cudaGetLastError();  // clears an error CUDA lets us clear; a sticky one every call reports again
    return cudaDeviceSynchronize() != cudaSuccess;
#else
    return false;
#endif
  }

  // Field names, types and ranges; then toggle names (UNKNOWN_TOGGLE only for a well-formed request).
  Request parse_request(const json::Value& req) const {
    using Kind = json::Value::Kind;
    const auto field = [&](const char* name, Kind kind, const char* what) -> const json::Value& {
      const json::Value* v = req.find(name);
      if (v == nullptr) throw RequestError("BAD_REQUEST", std::string("missing field \"") + name + "\"");
      if (v->kind != kind)
        throw RequestError("BAD_REQUEST", std::string("field \"") + name + "\" must be " + what + ", got " + json::kind_name(v->kind));
      return *v;
    };
    const auto integer = [&](const char* name, long long min) {
      const double d = field(name, Kind::Number, "an integer").number;
      if (d != std::floor(d) || d < static_cast<double>(min) || d > 9007199254740992.0)
        throw RequestError("BAD_REQUEST", std::string("field \"") + name + "\" must be an integer >= " + std::to_string(min) + ", got " + json::number(d));
      return static_cast<long long>(d);
    };
    if (field("v", Kind::Number, "1").number != 1) throw RequestError("BAD_REQUEST", "field \"v\" must be 1");
    Request r;
    r.id = field("id", Kind::String, "a string").string;
    r.op = field("op", Kind::String, "a string").string;
    // The framing gives every line a "type"; a request names its kind in "op", so a "type" is allowed, not read.
    std::set<std::string> known{"v", "id", "op", "type", "arm", "toggles", "seed"};
    if (r.op == "rep" || r.op == "trace") known.insert({"warmup", "steps"});
    else if (r.op == "identity") known.insert({"toggle", "replays"});
    else throw RequestError("BAD_REQUEST", "unknown op \"" + r.op + "\" (rep, identity or trace)");
    for (const std::string& k : req.keys)
      if (known.count(k) == 0) throw RequestError("BAD_REQUEST", "unknown field \"" + k + "\" in a " + r.op + " request");
    if (const json::Value* t = req.find("type"); t != nullptr && t->kind != Kind::String)
      throw RequestError("BAD_REQUEST", "field \"type\" must be a string");
    r.arm = field("arm", Kind::String, "a string").string;
    if (req.find("seed") != nullptr) r.seed = static_cast<std::uint64_t>(integer("seed", 0));
    const json::Value& toggles = field("toggles", Kind::Object, "an object");
    for (std::size_t i = 0; i < toggles.keys.size(); ++i) {
      const json::Value& v = toggles.items[i];
      if (v.kind == Kind::Bool) r.toggles.set(toggles.keys[i], v.boolean);
      else if (v.kind == Kind::String) r.toggles.set_value(toggles.keys[i], v.string);
      else throw RequestError("BAD_REQUEST", "toggle \"" + toggles.keys[i] + "\" must be a boolean or a string, got " + json::kind_name(v.kind));
    }
    if (r.op == "rep" || r.op == "trace") {
      r.warmup = integer("warmup", 0);
      r.steps = integer("steps", 1);
    } else {
      r.toggle = field("toggle", Kind::String, "a string").string;
      r.replays = integer("replays", 1);
    }
    for (const auto& kv : r.toggles.all()) known_toggle(kv.first);
    if (r.op == "identity") known_toggle(r.toggle);
    return r;
  }

  void known_toggle(const std::string& name) const {
    if (std::find(toggles_.begin(), toggles_.end(), name) != toggles_.end()) return;
    std::string list;
    for (const std::string& t : toggles_) list += (list.empty() ? "" : ", ") + t;
    throw RequestError("UNKNOWN_TOGGLE", "unknown toggle \"" + name + "\"; " + program_name() + " understands: " +
                                             (list.empty() ? "none" : list));
  }

  // Runs the program's code; what it throws is STEP_FAILED, except a capture's failure.
  template <class F>
  static void user(const std::string& what, F&& f) {
    try {
      f();
    } catch (const CaptureFailed&) {
      throw;
    } catch (const std::exception& e) {
      throw StepFailed(what + " threw: " + e.what());
    } catch (...) {
      throw StepFailed(what + " threw something that is not a std::exception");
    }
  }

  void reset() { user("reset()", [&] { p_.reset(); }); }

  // One step, timed on its own; its work is done (and checked) when this returns. With `own`, the
  // driver calls the program made in it, counted around p_.step() and the step's two event records
  // (which the library does not count) but outside them: no read of the counters is timed, and the
  // header's synchronize comes after the second read, so it is not the program's.
  double step(const Toggles& t, const std::string& which, InjectCounts* own = nullptr) {
    const std::string what = "step() (" + which + ")";
    rt().shape = shape(t);
    const auto run = [&] { user(what, [&] { p_.step(t); }); };
    const InjectCounts before = own != nullptr ? inject_.counts() : InjectCounts{};
#ifdef ORCH_RANK_CUDA
    if (rt().cuda) {
      ORCH_CUDA(cudaEventRecord(ev_start_, rt().stream));
      run();
      ORCH_CUDA(cudaEventRecord(ev_end_, rt().stream));
      if (own != nullptr) *own = since(inject_.counts(), before);
      ORCH_CUDA(cudaGetLastError());
      ORCH_CUDA(cudaStreamSynchronize(rt().stream));
      float ms = 0;
      ORCH_CUDA(cudaEventElapsedTime(&ms, ev_start_, ev_end_));
      return ms;
    }
#endif
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (own != nullptr) *own = since(inject_.counts(), before);
    return ms;
  }

  // The toggles as a graph's key sees them: every toggle of hello, in order, absent ones "false".
  std::string shape(const Toggles& t) const {
    std::string s;
    for (const std::string& name : toggles_) {
      const std::string v = t.value(name);
      s += name + '=' + (v.empty() ? std::string("false") : v) + ';';
    }
    return s;
  }

  // {"name":"hash",...} of the outputs as they are now; outside any timed interval.
  std::string hashes() {
    std::vector<Output> outs;
    user("outputs()", [&] { outs = p_.outputs(); });
    std::vector<const void*> host(outs.size());
    for (std::size_t i = 0; i < outs.size(); ++i) host[i] = outs[i].data;
#ifdef ORCH_RANK_CUDA
    if (rt().cuda) {
      std::size_t total = 0;
      for (const Output& o : outs) total += o.on_device ? o.bytes : 0;
      staging_.resize(total);
      std::size_t at = 0;
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (!outs[i].on_device) continue;
        ORCH_CUDA(cudaMemcpyAsync(staging_.data() + at, outs[i].data, outs[i].bytes, cudaMemcpyDeviceToHost, rt().stream));
        host[i] = staging_.data() + at;
        at += outs[i].bytes;
      }
      ORCH_CUDA(cudaStreamSynchronize(rt().stream));  // host outputs may be written by the stream's copies too
    }
#endif
    std::string obj;
    for (std::size_t i = 0; i < outs.size(); ++i)
      obj += (obj.empty() ? "" : ",") + json::quote(outs[i].name) + ":\"" + blake2b64_hex(host[i], outs[i].bytes) + "\"";
    return "{" + obj + "}";
  }

  void begin(const Request& r) {
    rt().seed = r.seed;
    rt().captures = 0;
    rt().replays = 0;
  }

  std::string rep(const Request& r) {
    const std::int64_t t_start = monotonic_ns();
    begin(r);
    inject_.resume();
    const InjectCounts counts_start = inject_.counts();
    const InjectClock clock_start = inject_.clock();
    const InjectEcc ecc_start = inject_.ecc();
    InjectClock clock_end;
    InjectEcc ecc_end;
    reset();
    // The graph is captured here, before the warm-up, so no timed step pays for a capture.
    if (!graph_toggle_.empty() && r.toggles.on(graph_toggle_)) {
      step(r.toggles, "the capture step");
      reset();
    }
    std::vector<double> warmup_ms, step_ms;
    std::vector<std::string> hashes_of;
    // PROTOCOL.md "Launch counts and clocks": the warm-up is counted and the library paused for the
    // timed steps (CUPTI attached slows them), where it can pause; else the timed steps are counted.
    const bool count_warmup = r.warmup > 0 && inject_.can_pause();
    std::vector<InjectCounts> own(static_cast<std::size_t>(std::max(r.warmup, r.steps)));
    for (long long i = 0; i < r.warmup; ++i)
      warmup_ms.push_back(step(r.toggles, "warm-up step " + std::to_string(i + 1),
                               count_warmup ? &own[static_cast<std::size_t>(i)] : nullptr));
    const bool counted_warmup = count_warmup && inject_.pause();
    const std::size_t replays_before = rt().replays;
    std::int64_t t_end = t_start;
    for (long long i = 0; i < r.steps; ++i) {
      step_ms.push_back(step(r.toggles, "measured step " + std::to_string(i + 1),
                             counted_warmup ? nullptr : &own[static_cast<std::size_t>(i)]));
      t_end = monotonic_ns();
      if (i + 1 == r.steps) {
        clock_end = inject_.clock();
        ecc_end = inject_.ecc();
      }
      hashes_of.push_back(hashes());
    }
    const std::uint64_t captured = since(inject_.counts(), counts_start).captured;
    const bool replayed = rt().replays > replays_before;
    const std::string graph = !replayed ? "null" : rt().captures > 0 ? "\"fresh\"" : "\"reused\"";
    return "{\"v\":1,\"type\":\"rep\",\"id\":" + json::quote(r.id) + ",\"arm\":" + json::quote(r.arm) +
           ",\"mode\":\"" + (replayed ? "graph" : "eager") + "\",\"graph\":" + graph + ",\"warmup_ms\":" + list(warmup_ms) +
           ",\"step_ms\":" + list(step_ms) + ",\"hashes\":" + list(hashes_of) + ",\"counters\":" + counters() +
           ",\"launches\":" + launches(own, counted_warmup ? r.warmup : r.steps, counted_warmup, captured) + clocks(clock_start, clock_end) + ecc_errors(ecc_start, ecc_end) +
           ",\"t_start_ns\":" + std::to_string(t_start) + ",\"t_end_ns\":" + std::to_string(t_end) + ",\"final\":true}";
  }

  // PROTOCOL.md "Launch counts and clocks": one count per counted step (the first `n` of `own`:
  // warm-up steps or measured steps, as `warmup` says), or why there are none.
  std::string launches(const std::vector<InjectCounts>& own, long long n, bool warmup, std::uint64_t captured) const {
    if (!inject_.counting()) return "{\"source\":\"none\",\"reason\":" + json::quote(inject_.reason()) + "}";
    std::string stopped;
    if (!inject_.still_counting(&stopped)) return "{\"source\":\"none\",\"reason\":" + json::quote(stopped) + "}";
    const auto column = [&](std::uint64_t InjectCounts::*field) {
      std::string s;
      for (long long i = 0; i < n; ++i) s += (s.empty() ? "" : ",") + std::to_string(own[static_cast<std::size_t>(i)].*field);
      return "[" + s + "]";
    };
    return std::string("{\"source\":\"cupti\",\"counted\":") + (warmup ? "\"warmup\"" : "\"timed\"") + ",\"kernels\":" + column(&InjectCounts::kernels) + ",\"captured\":" +
           std::to_string(captured) + ",\"graphs\":" + column(&InjectCounts::graphs) + ",\"memcpy\":" +
           column(&InjectCounts::memcpy) + ",\"memset\":" + column(&InjectCounts::memset) + ",\"syncs\":" +
           column(&InjectCounts::syncs) + "}";
  }

  // ,"clocks":{...},"xid_events":N; nothing where NVML did not answer both times.
  std::string clocks(const InjectClock& start, const InjectClock& end) const {
    if (start.ok == 0 || end.ok == 0) return {};
    return ",\"clocks\":{\"start\":" + inject_.clock_json(start) + ",\"end\":" + inject_.clock_json(end) +
           "},\"xid_events\":" + std::to_string(end.xid_events - start.xid_events);
  }

  // PROTOCOL.md "trace": a rep's order under the injection library's kernel tracing (a probe's,
  // never timed): each measured step between two marks on CUPTI's clock, its work done (step()
  // synchronizes) before the end mark; then the records the library kept.
  std::string trace(const Request& r) {
    const std::int64_t t_start = monotonic_ns();
    begin(r);
    unsigned long long dropped = 0;
    (void)inject_.take_kernels(&dropped);  // what came before the request is not its own
    (void)inject_.take_graphs();
    reset();
    if (!graph_toggle_.empty() && r.toggles.on(graph_toggle_)) {
      step(r.toggles, "the capture step");
      reset();
    }
    for (long long i = 0; i < r.warmup; ++i) step(r.toggles, "warm-up step " + std::to_string(i + 1));
    (void)inject_.take_kernels(&dropped);  // the warm-up's kernels are no step's
    const std::size_t replays_before = rt().replays;
    std::string steps;
    for (long long i = 0; i < r.steps; ++i) {
      const std::uint64_t start = inject_.timestamp();
      step(r.toggles, "traced step " + std::to_string(i + 1));
      steps += std::string(steps.empty() ? "" : ",") + "{\"start_ns\":" + std::to_string(start) + ",\"end_ns\":" + std::to_string(inject_.timestamp()) + "}";
    }
    const bool replayed = rt().replays > replays_before;
    return "{\"v\":1,\"type\":\"trace\",\"id\":" + json::quote(r.id) + ",\"arm\":" + json::quote(r.arm) + ",\"mode\":\"" +
           (replayed ? "graph" : "eager") + "\",\"trace\":" + trace_json(steps) + ",\"t_start_ns\":" + std::to_string(t_start) +
           ",\"t_end_ns\":" + std::to_string(monotonic_ns()) + ",\"final\":true}";
  }

  std::string trace_json(const std::string& steps) const {
    if (!inject_.tracing()) return "{\"source\":\"none\",\"reason\":" + json::quote(inject_.trace_reason()) + "}";
    unsigned long long dropped = 0;
    std::string kernels, graphs;
    for (const InjectKernel& k : inject_.take_kernels(&dropped))
      kernels += std::string(kernels.empty() ? "" : ",") + "{\"start_ns\":" + std::to_string(k.start_ns) + ",\"end_ns\":" +
                 std::to_string(k.end_ns) + ",\"graph_id\":" + std::to_string(k.graph_id) + ",\"stream_id\":" + std::to_string(k.stream_id) + "}";
    for (const InjectGraph& g : inject_.take_graphs())
      graphs += std::string(graphs.empty() ? "" : ",") + "{\"graph_id\":" + std::to_string(g.graph_id) + ",\"exec_id\":" +
                std::to_string(g.exec_id) + ",\"nodes\":" + std::to_string(g.nodes) + ",\"instantiate_ns\":" + std::to_string(g.instantiate_ns) + "}";
    return "{\"source\":\"cupti\",\"steps\":[" + steps + "],\"kernels\":[" + kernels + "],\"graphs\":[" + graphs +
           "],\"dropped\":" + std::to_string(dropped) + "}";
  }

  // ,"ecc_errors":N, the rep's volatile uncorrected ECC errors; nothing where NVML did not count them twice.
  static std::string ecc_errors(const InjectEcc& start, const InjectEcc& end) {
    if (!start.ok || !end.ok) return {};
    return ",\"ecc_errors\":" + std::to_string(end.volatile_uncorrected >= start.volatile_uncorrected ? end.volatile_uncorrected - start.volatile_uncorrected : 0);
  }

  // The gate's two sides from one reset state each; the worker compares them.
  std::string identity(const Request& r) {
    const std::int64_t t_start = monotonic_ns();
    begin(r);
    Toggles eager = r.toggles;
    eager.erase(r.toggle);
    std::vector<std::string> eager_hashes, graph_hashes;
    reset();
    for (long long k = 0; k < r.replays; ++k) {
      step(eager, "eager step " + std::to_string(k + 1));
      eager_hashes.push_back(hashes());
    }
    drop_graphs();  // the gate always captures afresh
    reset();
    step(r.toggles, "the capture step");
    reset();
    const std::size_t replays_before = rt().replays;
    for (long long k = 0; k < r.replays; ++k) {
      step(r.toggles, "replay " + std::to_string(k + 1));
      graph_hashes.push_back(hashes());
    }
    const std::int64_t t_end = monotonic_ns();
    const bool replayed = rt().replays > replays_before;
    return "{\"v\":1,\"type\":\"identity\",\"id\":" + json::quote(r.id) + ",\"arm\":" + json::quote(r.arm) +
           ",\"mode\":\"" + (replayed ? "graph" : "eager") + "\",\"replays\":" + std::to_string(r.replays) +
           ",\"eager\":" + list(eager_hashes) + ",\"graph\":" + list(graph_hashes) + ",\"counters\":" + counters() +
           ",\"t_start_ns\":" + std::to_string(t_start) + ",\"t_end_ns\":" + std::to_string(t_end) + ",\"final\":true}";
  }

  // The program's counters as a JSON object (the worker's gate reads launches_per_step from them too).
  std::string counters() {
    std::map<std::string, double> counters;
    user("counters()", [&] { counters = p_.counters(); });
    std::string s;
    for (const auto& kv : counters) {
      if (!std::isfinite(kv.second)) throw StepFailed("counters(): \"" + kv.first + "\" is not a finite number");
      s += (s.empty() ? "" : ",") + json::quote(kv.first) + ":" + json::number(kv.second);
    }
    return "{" + s + "}";
  }

  static std::string list(const std::vector<double>& xs) {
    std::string s;
    for (double x : xs) s += (s.empty() ? "" : ",") + json::number(x);
    return "[" + s + "]";
  }
  static std::string list(const std::vector<std::string>& objects) {
    std::string s;
    for (const std::string& o : objects) s += (s.empty() ? "" : ",") + o;
    return "[" + s + "]";
  }

  static void emit(const std::string& line) { write_line(line); }

  Program& p_;
  std::vector<std::string> toggles_;
  std::string graph_toggle_;
  Inject inject_;
#ifdef ORCH_RANK_CUDA
  cudaEvent_t ev_start_ = nullptr, ev_end_ = nullptr;
  std::vector<unsigned char> staging_;
#endif
};

}  // namespace detail

// A rep's counting as serve() does it (PROTOCOL.md "Launch counts and clocks"), for a program's
// own timing outside orch (a --standalone mode, bench/h200/user-rank/counting3.sh): rep_start() at
// each rep's start resumes the injection library a last rep paused; timed_steps_begin() between
// the warm-up and the timed steps pauses it (CUPTI off the driver's path), true when it did. Does
// nothing where no injection library counts. After CUDA's first call.
class RepCounting {
 public:
  RepCounting() { inject_.open(); }
  void rep_start() { inject_.resume(); }
  bool timed_steps_begin() { return inject_.pause(); }

 private:
  detail::Inject inject_;
};

// Serves the protocol until stdin closes (0), or until a sticky CUDA error or a failed start (1).
inline int serve(Program& program) {
  // The protocol stream is the stdout we started with; fd 1 becomes stderr so that a printf of
  // the program or of a library it loads cannot reach the protocol. What stdio buffered before
  // this is not flushed now: it goes wherever fd 1 points when it is flushed, stderr.
  const int out = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (out < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::fprintf(stderr, "orch_rank: cannot set up the protocol stream: %s\n", std::strerror(errno));
    return 1;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);  // stderr lines reach people as they are printed
  detail::io().out = out;
  try {
    return detail::Server(program).run();
  } catch (const std::exception& e) {  // only the protocol stream's own failure reaches here
    std::fprintf(stderr, "orch_rank: %s\n", e.what());
    return 1;
  }
}

}  // namespace orch_rank
