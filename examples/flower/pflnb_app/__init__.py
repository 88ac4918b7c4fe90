"""pflnb-app: any pflnb method as a Flower app (the ClientApp and ServerApp of pflnb.flower)."""
