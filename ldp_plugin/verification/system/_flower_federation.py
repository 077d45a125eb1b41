"""Flower's own SuperLink state and grid in this process, with SuperNodes answering in it: the
run as ``flwr.simulation`` sets it up (an ``InMemoryLinkState`` from Flower's ``LinkStateFactory``,
a run with its primary task, nodes registered with heartbeats, an ``InMemoryGrid`` over it), and
each SuperNode a ``ClientApp`` called with Flower's ``Message`` and ``Context`` when the grid pushes
to it, its reply stored in the LinkState as Flower's simulation engine stores it — a ``ClientApp``
that raises answers Flower's error message, its text included. Only the transport's threads are
left out: each push is followed by one engine step, so a round never waits on a thread."""

from __future__ import annotations

from uuid import uuid4

from flwr.app import Context, Error, Message, RecordDict
from flwr.app.user_config import UserConfig
from flwr.clientapp import ClientApp
from flwr.common.constant import (HEARTBEAT_INTERVAL_INF, NOOP_ACCOUNT_NAME, NOOP_FLWR_AID, RUN_ID_NUM_BYTES, SUPERLINK_NODE_ID,
                                  TASK_ID_NUM_BYTES, ErrorCode)
from flwr.proto.task_pb2 import Task  # pylint: disable=E0611
from flwr.server.superlink.linkstate import LinkStateFactory
from flwr.server.superlink.linkstate.in_memory_linkstate import RunRecord
from flwr.server.superlink.linkstate.utils import generate_rand_int_from_bytes
from flwr.supercore.constant import FLWR_IN_MEMORY_DB_NAME, NOOP_FEDERATION_ID
from flwr.supercore.object_store import ObjectStoreFactory
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity
from flwr.superlink.federation import NoOpFederationManager
from flwr.superlink.grid import InMemoryGrid

__all__ = ["InProcessFederation"]


class InProcessFederation:
    """Flower's SuperLink state and grid, with SuperNodes answering in this process (module
    docstring). :attr:`grid` is the ServerApp's grid; :attr:`sent` the replies each node stored."""

    def __init__(self):
        self._saved = (TaskIdentity._run_id, TaskIdentity._task_id, TaskIdentity._node_id)
        factory = LinkStateFactory(FLWR_IN_MEMORY_DB_NAME, NoOpFederationManager(), ObjectStoreFactory())
        self.state = factory.state()
        self.run = Run.create_empty(run_id=generate_rand_int_from_bytes(RUN_ID_NUM_BYTES))
        self.run.primary_task_id = generate_rand_int_from_bytes(TASK_ID_NUM_BYTES)
        self.run.federation_id = NOOP_FEDERATION_ID
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, self.run.run_id, SUPERLINK_NODE_ID
        self.state.run_ids[self.run.run_id] = RunRecord(run=self.run)
        self.state.task_store[self.run.primary_task_id] = Task(task_id=self.run.primary_task_id, run_id=self.run.run_id)
        self.nodes: dict = {}
        self.sent: dict = {}
        self.grid = _DeliveringGrid(factory, self)
        self.grid.set_run(self.run)

    def close(self) -> None:
        TaskIdentity._run_id, TaskIdentity._task_id, TaskIdentity._node_id = self._saved

    def add_node(self, app: ClientApp, node_config: dict, *, queries: bool = True) -> int:
        """A SuperNode running ``app`` with ``node_config``; ``queries=False``: it registers, then
        drops out (receives each query and never replies)."""
        nid = self.state.create_node(NOOP_FLWR_AID, NOOP_ACCOUNT_NAME, uuid4().bytes + uuid4().bytes, heartbeat_interval=HEARTBEAT_INTERVAL_INF)
        self.state.acknowledge_node_heartbeat(node_id=nid, heartbeat_interval=HEARTBEAT_INTERVAL_INF)
        self.nodes[nid] = (app, UserConfig(node_config), queries)
        self.sent[nid] = []
        return nid

    def deliver(self) -> None:
        """Each SuperNode pulls its messages from the LinkState, runs its ClientApp and stores the
        reply (a raising ClientApp: Flower's error message carrying the exception's text)."""
        for nid, (app, node_config, queries) in self.nodes.items():
            for msg in self.state.get_message_ins(node_id=nid, limit=None):
                if not queries and "query" in msg.content:
                    continue
                ctx = Context(run_id=self.run.run_id, node_id=nid, node_config=node_config, state=RecordDict(), run_config=UserConfig())
                try:
                    rep = app(msg, ctx)
                except Exception as ex:  # noqa: BLE001 - as Flower's engine answers a ClientApp that raised
                    rep = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=f"{type(ex)}:<'{ex}'>"), reply_to=msg)
                rep.metadata.__dict__["_message_id"] = str(uuid4())
                if self.state.store_message_res(rep) is not None:
                    self.sent[nid].append(rep)


class _DeliveringGrid(InMemoryGrid):
    """Flower's in-memory grid; after each push the SuperNodes answer (one engine step)."""

    def __init__(self, factory: LinkStateFactory, federation: InProcessFederation):
        super().__init__(state_factory=factory, pull_interval=0.0)
        self._federation = federation

    def push_messages(self, messages):
        ids = list(super().push_messages(messages))
        self._federation.deliver()
        return ids
