"""Typed flow parameters that take what the command line takes.

A flow parameter's annotation is what Prefect validates a run's parameters against and what
the UI draws its run form from (the deployment's ``parameter_openapi_schema``).
:data:`StrategyParameter` is a :class:`~simweb.core.strategy.Strategy` given either as its
fields (a JSON object, the form's fields) or as the text form ``simweb build --strategy``
takes (``"anchor:32+content+links,stem,dist,nmdf"``, :meth:`Strategy.parse`): its schema is
``anyOf`` of the two, so the server accepts both and the UI offers both, and the flow's body
always receives a ``Strategy``.
"""
from __future__ import annotations

from typing import Annotated, Union

from pydantic import AfterValidator, Field

from simweb.core.strategy import Strategy

#: The text form's field in the UI's run form.
STRATEGY_TEXT = Annotated[str, Field(
    title="text form",
    description="The strategy as `simweb build --strategy` takes it: term sources joined by '+', then "
                "stemming, dist/nodist, the frequency weighting and the metric, e.g. "
                "anchor:32+content+links,stem,dist,nmdf",
    examples=["anchor:32+content,stem,dist,nmdf,jaccard"],
    min_length=1,
)]


def as_strategy(value: Strategy | str) -> Strategy:
    """A validated parameter value as a :class:`Strategy` (its text form parsed; a bad one
    raises StrategyError, which pydantic reports as the parameter's validation error)."""
    return value if isinstance(value, Strategy) else Strategy.parse(value)


StrategyParameter = Annotated[Union[Strategy, STRATEGY_TEXT], AfterValidator(as_strategy)]
