// Requests: defaults, flags and JSON fields, and every bad input with its protocol code.
#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

std::string code_of_json(const std::string& text) {
  try {
    request_from_json(json::parse(text));
  } catch (const RtError& e) {
    return protocol_code(e.errc());
  }
  return "ok";
}

std::string code_of_flags(const std::vector<std::string>& flags) {
  try {
    request_from_flags(flags);
  } catch (const RtError& e) {
    return protocol_code(e.errc());
  }
  return "ok";
}

}  // namespace

int main() {
  const Request d = request_from_flags({});
  CHECK(d.op == Op::Rep && d.workload == "decode" && d.warmup == 2 && d.steps == 8 && d.id == "0");

  const Request r = request_from_flags({"--workload", "decode", "--graph", "--identity", "7", "--steps=8",
                                        "--split-combine", "--hidden", "48", "--arm", "x"});
  CHECK(r.op == Op::Identity && r.replays == 7 && r.toggles.graph && r.toggles.split_combine);
  CHECK(r.params.hidden == 48 && r.arm == "x");
  CHECK(request_from_flags({"--workload", "probe"}).op == Op::Probe);

  const Request j = request_from_json(json::parse(
      R"({"id":"r1","op":"identity","arm":"a","workload":"train","params":{"params":3,"param_size":10},)"
      R"("toggles":{"graph":true,"pin":true},"warmup":0,"steps":3,"replays":4,"seed":9})"));
  CHECK(j.id == "r1" && j.op == Op::Identity && j.workload == "train" && j.params.params == 3);
  CHECK(j.toggles.pin && j.warmup == 0 && j.steps == 3 && j.replays == 4 && j.seed == 9);

  CHECK_EQ(code_of_json("{\"workload\":"), std::string("BAD_REQUEST"));
  CHECK_EQ(code_of_json("[1,2]"), std::string("BAD_REQUEST"));
  CHECK_EQ(code_of_json(R"({"nope":1})"), std::string("BAD_REQUEST"));
  CHECK_EQ(code_of_json(R"({"op":"dance"})"), std::string("BAD_REQUEST"));
  CHECK_EQ(code_of_json(R"({"workload":"nope"})"), std::string("UNKNOWN_WORKLOAD"));
  CHECK_EQ(code_of_json(R"({"toggles":{"pld":true}})"), std::string("UNKNOWN_TOGGLE"));
  CHECK_EQ(code_of_json(R"({"toggles":{"pdl":1}})"), std::string("BAD_REQUEST"));
  CHECK_EQ(code_of_json(R"({"params":{"hidden":-4}})"), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_json(R"({"params":{"hidden":4.5}})"), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_json(R"({"params":{"widht":4}})"), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_json(R"({"steps":0})"), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_json(R"({"warmup":-1})"), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_json(R"({"params":{"kernels_per_layer":8}})"), std::string("BAD_PARAM"));

  CHECK_EQ(code_of_flags({"--bogus"}), std::string("BAD_FLAG"));
  CHECK_EQ(code_of_flags({"--pld"}), std::string("UNKNOWN_TOGGLE"));
  CHECK_EQ(code_of_flags({"--workload", "nope"}), std::string("UNKNOWN_WORKLOAD"));
  CHECK_EQ(code_of_flags({"--hidden", "-3"}), std::string("BAD_PARAM"));
  CHECK_EQ(code_of_flags({"--steps"}), std::string("BAD_FLAG"));
  CHECK_EQ(code_of_flags({"--graph=1"}), std::string("BAD_FLAG"));
  CHECK_EQ(code_of_flags({"stray"}), std::string("BAD_FLAG"));

  CHECK_EQ(exit_code(Errc::BadParam), 2);
  CHECK_EQ(exit_code(Errc::BackendUnavailable), 3);
  CHECK_EQ(exit_code(Errc::CardBusy), 4);
  CHECK_EQ(exit_code(Errc::GateFailed), 5);
  CHECK_EQ(exit_code(Errc::DeviceError), 6);
  return finish("request_test");
}
