"""orch_rank: a user's program as a rank of orch, speaking the orch-rank protocol v1
(ranklib/PROTOCOL.md).

    import orch_rank

    class Program:
        name = "my-step"
        toggles = ["GRAPH"]
        graph_toggle = "GRAPH"
        def setup(self, params): ...      # params: ORCH_PARAMS, a dict
        def reset(self): ...              # back to the seed's state, IN PLACE
        def step(self, toggles):          # toggles: every toggle, absent ones False
            orch_rank.graph("body", self.body, enabled=toggles["GRAPH"])
        def outputs(self): return {"y": self.y}

    orch_rank.serve(Program())

Standard library only; torch is used when the program has imported it and sees a GPU.
"""

__version__ = "1.0"

from .exchange import exchange, nccl_unique_id  # noqa: E402
from .graphs import graph, launch  # noqa: E402
from .program import Program  # noqa: E402
from .protocol import serve  # noqa: E402
from .runner import Runner  # noqa: E402
from .seed import seed  # noqa: E402
from .toggles import on  # noqa: E402

__all__ = ["Program", "Runner", "exchange", "graph", "launch", "nccl_unique_id", "on", "seed", "serve", "__version__"]
