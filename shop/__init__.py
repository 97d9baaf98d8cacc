"""The demo shop backend (SQLite) and the business tools the agent may call."""
