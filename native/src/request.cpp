#include "request.hpp"

#include "graphrt/protocol_generated.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>

namespace graphrt {
namespace {

struct ParamSpec {
  const char* name;  // JSON field; the flag is --name with '_' as '-'
  std::uint32_t Params::*field;
  std::int64_t min;
  std::int64_t max;
};

constexpr ParamSpec param_spec(const char* name, std::uint32_t Params::*field) {
  return {name, field, limits::param(name).min, limits::param(name).max};
}

const ParamSpec kParams[] = {
    param_spec("kernels", &Params::kernels),
    param_spec("layers", &Params::layers),
    param_spec("kernels_per_layer", &Params::kernels_per_layer),
    param_spec("hidden", &Params::hidden),
    param_spec("max_pos", &Params::max_pos),
    param_spec("params", &Params::params),
    param_spec("param_size", &Params::param_size),
};
static_assert(std::size(kParams) == std::size(limits::kParams), "a param in limits.json has no field in Params");

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean "x"?)" for the closest name within distance 2, else "".
std::string suggest(const std::string& got, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& n : names) {
    const std::size_t d = edit_distance(got, n);
    if (d < best_d) best_d = d, best = n;
  }
  return best.empty() ? "" : " (did you mean \"" + best + "\"?)";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string flag_name(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::int64_t to_int(const std::string& what, const std::string& text, std::int64_t min, std::int64_t max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0)
    user_error(Errc::BadParam, what + ": expected an integer, got \"" + text + "\"");
  if (v < min || v > max)
    user_error(Errc::BadParam, what + ": " + text + " is out of range (" + std::to_string(min) + ".." +
                                   std::to_string(max) + ")");
  return v;
}

std::int64_t json_int(const std::string& what, const json::Value& v, std::int64_t min, std::int64_t max) {
  if (v.kind != json::Value::Kind::Number)
    user_error(Errc::BadRequest, what + ": expected an integer, got " + json::Value::kind_name(v.kind));
  if (v.number != std::floor(v.number) || v.text.find_first_of(".eE") != std::string::npos)
    user_error(Errc::BadParam, what + ": expected an integer, got " + v.text);
  if (std::fabs(v.number) > 9e15) user_error(Errc::BadParam, what + ": " + v.text + " is out of range");
  return to_int(what, std::to_string(static_cast<long long>(v.number)), min, max);
}

std::string json_string(const std::string& what, const json::Value& v) {
  if (v.kind != json::Value::Kind::String)
    user_error(Errc::BadRequest, what + ": expected a string, got " + json::Value::kind_name(v.kind));
  return v.text;
}

void set_workload(Request& r, const std::string& w) {
  const auto& names = workload_names();
  if (std::find(names.begin(), names.end(), w) == names.end())
    user_error(Errc::UnknownWorkload, "unknown workload \"" + w + "\"" + suggest(w, names) +
                                          "; known: " + joined(names));
  r.workload = w;
  if (w == "probe") r.op = Op::Probe;
}

const ParamSpec* find_param(const std::string& name) {
  for (const auto& p : kParams)
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<std::string> param_names() {
  std::vector<std::string> out;
  for (const auto& p : kParams) out.emplace_back(p.name);
  return out;
}

}  // namespace

void user_error(Errc errc, const std::string& message) { throw RtError(errc, protocol_code(errc), message); }

const std::vector<std::string>& toggle_names() {
  // the one list of graphrt's toggles: jobs/rank-protocol-constants.ts, through the generated header
  static const std::vector<std::string> names = GRAPHRT_TOGGLE_NAMES_INIT;
  static_assert(GRAPHRT_TOGGLE_COUNT == sizeof(Toggles) / sizeof(bool), "a toggle of the description without a field of Toggles");
  return names;
}

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> names = {"chain", "decode", "train", "probe"};
  return names;
}

bool* toggle_field(Toggles& t, const std::string& name) {
  if (name == "graph") return &t.graph;
  if (name == "pdl") return &t.pdl;
  if (name == "overlap") return &t.overlap;
  if (name == "split_combine") return &t.split_combine;
  if (name == "pin") return &t.pin;
  if (name == "freeze_pointer") return &t.freeze_pointer;
  if (name == "lazy_init") return &t.lazy_init;
  if (name == "allreduce") return &t.allreduce;
  return nullptr;
}

std::vector<std::string> toggles_on(const Toggles& t) {
  std::vector<std::string> out;
  Toggles copy = t;
  for (const auto& n : toggle_names())
    if (*toggle_field(copy, n)) out.push_back(n);
  return out;
}

std::string request_id_of(const json::Value& v) {
  const json::Value* id = v.find("id");
  if (id == nullptr) return "";
  if (id->kind == json::Value::Kind::String) return id->text;
  return "";
}

Request request_from_json(const json::Value& v) {
  if (v.kind != json::Value::Kind::Object)
    user_error(Errc::BadRequest, std::string("a request is a JSON object, got ") + json::Value::kind_name(v.kind));
  Request r;
  bool explicit_op = false;
  for (const auto& [key, val] : v.members) {
    if (key == "id") {
      // a string, as in every implementation of the rank protocol (test/conformance/)
      if (val.kind != json::Value::Kind::String) user_error(Errc::BadRequest, "id: expected a string");
      r.id = val.text;
    } else if (key == "v") {
      // the framing's version (ranklib/protocol.json "version"); optional in graphrt's dialect
      if (val.kind != json::Value::Kind::Number || val.text != std::to_string(GRAPHRT_PROTOCOL_VERSION))
        user_error(Errc::BadRequest, "v: this graphrt speaks version " + std::to_string(GRAPHRT_PROTOCOL_VERSION));
    } else if (key == "op") {
      const std::string op = json_string("op", val);
      explicit_op = true;
      if (op == "rep") r.op = Op::Rep;
      else if (op == "identity") r.op = Op::Identity;
      else if (op == "probe") r.op = Op::Probe;
      else if (op == "hello") r.op = Op::Hello;
      else user_error(Errc::BadRequest, "op: unknown op \"" + op + "\"; known: rep, identity, probe, hello");
    } else if (key == "arm") {
      r.arm = json_string("arm", val);
    } else if (key == "workload") {
      const Op keep = r.op;
      set_workload(r, json_string("workload", val));
      if (explicit_op) r.op = keep;
    } else if (key == "params") {
      if (val.kind != json::Value::Kind::Object) user_error(Errc::BadRequest, "params: expected an object");
      for (const auto& [pk, pv] : val.members) {
        const ParamSpec* p = find_param(pk);
        if (p == nullptr)
          user_error(Errc::BadParam, "params." + pk + ": unknown parameter" + suggest(pk, param_names()) +
                                         "; known: " + joined(param_names()));
        r.params.*(p->field) = static_cast<std::uint32_t>(json_int("params." + pk, pv, p->min, p->max));
      }
    } else if (key == "toggles") {
      if (val.kind != json::Value::Kind::Object) user_error(Errc::BadRequest, "toggles: expected an object");
      for (const auto& [tk, tv] : val.members) {
        bool* field = toggle_field(r.toggles, tk);
        if (field == nullptr)
          user_error(Errc::UnknownToggle, "toggles." + tk + ": unknown toggle" + suggest(tk, toggle_names()) +
                                              "; known: " + joined(toggle_names()));
        if (tv.kind != json::Value::Kind::Bool) user_error(Errc::BadRequest, "toggles." + tk + ": expected a boolean");
        *field = tv.boolean;
      }
    } else if (key == "warmup") {
      r.warmup = json_int("warmup", val, limits::kWarmup.min, limits::kWarmup.max);
    } else if (key == "steps") {
      r.steps = json_int("steps", val, limits::kSteps.min, limits::kSteps.max);
    } else if (key == "replays") {
      r.replays = json_int("replays", val, limits::kReplays.min, limits::kReplays.max);
    } else if (key == "seed") {
      r.seed = static_cast<std::uint64_t>(json_int("seed", val, 0, std::numeric_limits<std::int64_t>::max()));
    } else {
      user_error(Errc::BadRequest, "unknown request field \"" + key + "\"" +
                                       suggest(key, {"v", "id", "op", "arm", "workload", "params", "toggles",
                                                     "warmup", "steps", "replays", "seed"}));
    }
  }
  // The probe workload has no step to time or replay: asked for a rep or a gate, it is the
  // sender's mistake (answered, serving goes on), not a graphrt bug.
  if (r.workload == "probe" && (r.op == Op::Rep || r.op == Op::Identity))
    user_error(Errc::BadRequest, std::string("op ") + (r.op == Op::Rep ? "rep" : "identity") +
                                     ": workload probe is answered only by op probe (its five probe lines)");
  return r;
}

std::uint32_t param_value(const Params& p, std::string_view name) {
  for (const auto& spec : kParams)
    if (name == spec.name) return p.*(spec.field);
  RT_THROW(Errc::Internal, "", "param_value: no param \"" + std::string(name) + "\"");
}

Request request_from_flags(const std::vector<std::string>& args) {
  Request r;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (flag.rfind("--", 0) != 0) user_error(Errc::BadFlag, "unexpected argument \"" + flag + "\"");
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    std::string name = flag.substr(2);
    std::replace(name.begin(), name.end(), '-', '_');
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= args.size()) user_error(Errc::BadFlag, flag + " needs a value");
      return args[++i];
    };
    if (bool* t = toggle_field(r.toggles, name)) {
      if (has_value) user_error(Errc::BadFlag, flag + " is a toggle and takes no value");
      *t = true;
    } else if (const ParamSpec* p = find_param(name)) {
      r.params.*(p->field) = static_cast<std::uint32_t>(to_int(flag, next(), p->min, p->max));
    } else if (name == "id") {
      r.id = next();
    } else if (name == "arm") {
      r.arm = next();
    } else if (name == "workload") {
      set_workload(r, next());
    } else if (name == "warmup") {
      r.warmup = to_int(flag, next(), limits::kWarmup.min, limits::kWarmup.max);
    } else if (name == "steps") {
      r.steps = to_int(flag, next(), limits::kSteps.min, limits::kSteps.max);
    } else if (name == "identity") {
      r.replays = to_int(flag, next(), limits::kReplays.min, limits::kReplays.max);
      r.op = Op::Identity;
    } else if (name == "seed") {
      r.seed = static_cast<std::uint64_t>(to_int(flag, next(), 0, std::numeric_limits<std::int64_t>::max()));
    } else {
      std::vector<std::string> flags;
      for (const auto& t : toggle_names()) flags.push_back(flag_name(t));
      const std::string hint = suggest(flag_name(name), flags);
      // A near miss of a toggle is an unknown toggle; anything else an unknown flag.
      if (!hint.empty()) user_error(Errc::UnknownToggle, "unknown toggle " + flag + hint);
      user_error(Errc::BadFlag, "unknown flag " + flag + "; see PROTOCOL.md \"Requests\"");
    }
  }
  if (r.workload == "probe") r.op = Op::Probe;
  return r;
}

}  // namespace graphrt
