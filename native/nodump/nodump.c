/*
 * liborch_nodump.so: makes the orch worker that loads it non-dumpable (prctl PR_SET_DUMPABLE 0),
 * so that no other process of its user (a user's program run as the worker's own user) may read
 * its memory or environment through /proc/<pid>/mem, /proc/<pid>/environ or ptrace: the kernel
 * then allows that only to a process with CAP_SYS_PTRACE. Node has no prctl; the worker loads
 * this library with process.dlopen (worker/non-dumpable.ts), whose load runs the constructor.
 * A program the worker execs is dumpable again (exec resets the flag): it is the worker's memory
 * that holds the secrets, not its children's.
 *
 * The library is also a Node-API module exporting dumpable() (prctl PR_GET_DUMPABLE), so the
 * worker can check the flag took effect. The few Node-API functions it calls are declared here
 * rather than taken from node_api.h: their C ABI is stable across Node versions (Node-API 1), and
 * the build then needs no Node headers; node resolves them when it loads the library.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>

__attribute__((constructor)) static void orch_nodump(void) {
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
/* an enum in node_api_types.h, int-sized; napi_ok is 0 */
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb,
                                        void *data, napi_value *result);
extern napi_status napi_create_int32(napi_env env, int32_t value, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);

/* dumpable(): 0 once the constructor ran (non-dumpable), 1 or 2 otherwise, -1 when prctl fails */
static napi_value dumpable(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out = NULL;
  napi_create_int32(env, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), &out);
  return out;
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value fn = NULL;
  if (napi_create_function(env, "dumpable", SIZE_MAX, dumpable, NULL, &fn) == 0)
    napi_set_named_property(env, exports, "dumpable", fn);
  return exports;
}
