"""Running the statistical programs and the physics over their draws: the NUTS fits, the
convergence gate, predictive draws, LOO checks and the propagation into walls and hit years.
"""
