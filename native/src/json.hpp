// A minimal JSON reader and writer, enough for the protocol's flat shapes: requests are objects
// of strings, numbers, booleans and one level of nested objects; lines are written field by field.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphrt::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;  // String: the value; Number: the literal as written
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // in document order

  const Value* find(std::string_view key) const;
  static const char* kind_name(Kind k);
};

// Throws RtError(BadRequest) naming the byte offset of the first problem.
Value parse(std::string_view text);

std::string quote(std::string_view s);

// Builds one JSON object: Obj().put("a", 1).put("b", "x").str() == {"a":1,"b":"x"}.
class Obj {
 public:
  Obj& put(std::string_view key, std::string_view value);
  Obj& put(std::string_view key, const char* value) { return put(key, std::string_view(value)); }
  Obj& put(std::string_view key, const std::string& value) { return put(key, std::string_view(value)); }
  Obj& put(std::string_view key, bool value);
  Obj& put(std::string_view key, std::int64_t value);
  Obj& put(std::string_view key, std::uint64_t value);
  Obj& put(std::string_view key, int value) { return put(key, static_cast<std::int64_t>(value)); }
  Obj& put(std::string_view key, double value);
  Obj& put_null(std::string_view key);
  Obj& put_raw(std::string_view key, std::string_view json);  // an already-serialized value
  Obj& put(std::string_view key, const std::vector<std::string>& values);
  Obj& put(std::string_view key, const std::vector<double>& values);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(std::string_view k);
  std::string body_;
};

}  // namespace graphrt::json
