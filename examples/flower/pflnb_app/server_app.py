"""pflnb-app: the ServerApp. It reads the run from the run config ([tool.flwr.app.config]), samples clients as pflnb's
engine does and runs the method's own server step."""

from pflnb.flower import server_app

app = server_app()
