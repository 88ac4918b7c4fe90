"""Theory tools: min-norm directions (MGDA), NTK and Gram matrices, mixup identities, factor analysis."""
