"""Theory tools: min-norm directions (MGDA), NTK and Gram matrices, factor analysis."""
