"""The rank protocol's constants, generated from jobs/rank-protocol-constants.ts by `npm run gen:protocol`; do not edit."""

PROTOCOL = "orch-rank"
VERSION = 1
LINE_MAX_BYTES = 1048576  # a line's bytes, its "\n" not counted
REQUESTS_IN_FLIGHT_MAX = 2  # written by the worker, not yet answered
TOGGLE_ON_STRINGS = ("true", "on",)
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USER_ERROR = 2
EXCHANGE_KEY_PATTERN = "^[A-Za-z0-9_.-]{1,64}$"
EXCHANGE_MAX_BYTES = 4096
EXCHANGE_MAX_PER_ATTEMPT = 16
EXCHANGE_NCCL_KEY = "nccl-id"
HOST_PHASE_ENV = "ORCH_HOST_PHASE"
HOST_PHASE_DEVICES_ENV = "CUDA_VISIBLE_DEVICES"
PREPARE_TOUCHED_CUDA = "PREPARE_TOUCHED_CUDA"
INJECT_ABI = 1
INJECT_COUNTS_FIELDS = ("abi", "initialized", "kernels", "captured", "graphs", "memcpy", "memset", "syncs")
