"""sandboxd, the runtime API of kubernetes-sigs/agent-sandbox (KEP-539.2), served by the gateway so
that project's SDKs drive agentbox unmodified: ``process.v1.ProcessService`` over gRPC
(:mod:`.process`, messages generated from ``process.proto`` by ``scripts/gen-proto``) and the
filesystem and runtime REST API (:mod:`.files`), both behind the gateway's key (:mod:`.guard`),
started with the gateway when ``SANDBOXD_ENABLED`` is on (:mod:`.server`)."""

import os

#: gRPC's fork support (its ``pthread_atfork`` handlers, on by default) makes a child forked by the
#: gateway's event loop (uvloop forks without vfork) crash now and then before it execs: one
#: ``Execute`` in ten ended in SIGSEGV. The gateway forks, it never continues gRPC in a child. Set
#: before gRPC is first imported; :func:`.server.serving` takes it out of the environment again once
#: the server has read it, so sandbox commands do not inherit it.
FORK_SUPPORT_SET = "GRPC_ENABLE_FORK_SUPPORT" not in os.environ
if FORK_SUPPORT_SET:
    os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"
