"""The HTTP chat service (``csagent serve``): customer endpoints, SSE turns and the agents' desk."""
