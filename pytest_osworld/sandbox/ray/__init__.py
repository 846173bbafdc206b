"""The ``ray`` sandbox provider: sandboxes on a Ray cluster's nodes (docs/scaling.md).

- ``provider``: ``RayProvider`` (the driver side, in each pytest process) and ``RaySandbox``;
- ``cluster``: ``RunCluster``, the run's side of the cluster, in the process that owns the run;
- ``agent``: ``NodeAgent``, the actor on each node that starts its sandboxes and keeps its warm pool;
- ``forward``: guest ports relayed from a node's cluster address to the claiming driver only;
- ``resources``: what a sandbox asks of a node, what the nodes offer, a node's settings;
- ``on_nodes``: tasks run on every node (cleanup, a run's end without agents, what the sandbox provides);
- ``connect``: this process as a driver of the cluster.

Ray is an optional extra (``pip install 'pytest-osworld[ray]'``): nothing here is imported unless the
``ray`` sandbox is chosen.
"""
