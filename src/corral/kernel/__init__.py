"""The kernel below the runtime: store sessions, registry, dispatcher, configuration,
identity, approvals and logs (see :class:`corral.kernel.kernel.Kernel`)."""

from corral.kernel.approvals import ApprovalRecord, ApprovalStore, Decision
from corral.kernel.bootstrap import DEFAULT_AGENT
from corral.kernel.kernel import Kernel, open_kernel

__all__ = ["DEFAULT_AGENT", "ApprovalRecord", "ApprovalStore", "Decision", "Kernel", "open_kernel"]
