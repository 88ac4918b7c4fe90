"""pflnb-app: the ClientApp. It trains and evaluates one client of the run the server's messages name, through
pflnb's own client runner; the client's state stays in the node's context.state."""

from pflnb.flower import client_app

app = client_app()
