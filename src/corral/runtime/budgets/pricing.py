"""The cost of a model response, from the usage it reports, with ``genai-prices``."""

from __future__ import annotations

__all__ = ["cost_usd", "unpriced"]


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The price of one response of ``model`` (``provider:name`` or a bare name), or None
    when ``genai-prices`` does not know that model: a cost is never guessed."""
    # Imported here: its price tables load in a sixth of a second, paid only once a model
    # has answered.
    from genai_prices import Usage, calc_price

    provider, _, name = model.partition(":")
    if not name:
        provider, name = "", model
    try:
        price = calc_price(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            name,
            provider_id=provider or None,
        )
    except LookupError:
        return None
    return float(price.total_price)


def unpriced(model: str) -> str | None:
    """Why a cost limit cannot be checked for ``model``, or None when it can."""
    if cost_usd(model, 0, 0) is not None:
        return None
    return (
        f"the cost limit cannot be checked: genai-prices has no price for model {model!r}; "
        "remove the cost_usd limit (keep token limits instead) or use a model it prices"
    )
