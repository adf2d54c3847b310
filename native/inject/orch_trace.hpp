// Trace mode of liborch_inject.so (orch_inject.h "Trace mode"): kernel activity records and graph
// instantiations, for a `design: probe` of a command workload only. Activity tracing costs
// +1.35-2.2 us per eager launch and +0.19-0.40 us per graph node on the H200, so it is never on in
// a timed rep: the library traces only when ORCH_INJECT_TRACE=1 was set when the driver loaded it.
#pragma once

#include <cupti.h>

#include <string>

namespace orch_inject {

// ORCH_INJECT_TRACE=1 in the process's environment.
bool trace_wanted();

// Registers the activity buffers and enables kernel records; "" on success, else why not.
std::string trace_start();

// Whether `name` (CUPTI's name of a driver callback) is a graph instantiation trace mode times.
bool is_instantiate(const std::string& name);

// A driver callback of an instantiation (enter or exit), as CUPTI gives it.
void on_instantiate(const CUpti_CallbackData* cb);

}  // namespace orch_inject
