"""The handler runtime: the worker, the context a handler gets, steps, effects, assets,
budgets and the kind registry."""
