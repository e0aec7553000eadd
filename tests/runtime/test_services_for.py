"""What a run's calls get as ``ctx.services`` is built once while the model and the
installed services are the same, and anew as soon as either changes."""

from __future__ import annotations

from typing import Any, cast

from corral.runtime.runtime import Runtime
from corral.tools.services import Services


class Extra:
    """A service installed after the first ask."""


async def test_the_services_of_a_run_follow_the_model_and_the_installed_services(
    rt: Runtime,
) -> None:
    model, other = cast(Any, object()), cast(Any, object())
    first = rt.services_for(model)
    assert rt.services_for(model) is first  # every step asks: built once
    assert first.conversation_model is model and first.usage is rt.usage
    assert rt.services_for(other).conversation_model is other
    extra = Extra()
    rt.kernel.services = Services(extra={Extra: extra}).over(rt.kernel.services)
    again = rt.services_for(model)
    assert again is not first and again.get(Extra) is extra
    assert again.conversation_model is model
