"""A client of `sessions serve`, and an OpenAI Agents SDK Session over it.

Standard library only. The server's API is documented in API.md at the
root of the sessionstore repository.

    from sessionstore_agents import StoreSession

    session = StoreSession("my-conversation")        # created when missing
    result = await Runner.run(agent, "hello", session=session)
    await session.close()                             # releases the lease

The server is found at `socket` (a unix socket path), else at `url`
(http://127.0.0.1:PORT, with `token`), else at $SESSIONSTORE_SOCKET, else
at $SESSIONSTORE_URL with $SESSIONSTORE_TOKEN.
"""

from ._client import Client, ServerError, ConflictError
from ._session import StoreSession

__all__ = ["Client", "ServerError", "ConflictError", "StoreSession"]
