"""csagent: a LangGraph customer-service agent for Chinese e-commerce that does not make things up."""

__version__ = "0.1.0"
